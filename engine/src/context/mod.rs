//! The broker's shared context: what handlers, the server, the cluster and mirror code all work
//! with. It sits below them: nothing here imports a handler, so the handler registry (which
//! names every handler) and the handlers (which take a `Call`) do not import each other.

mod api_spec;
mod broker;
mod call;

pub use api_spec::{AclCheck, ApiSpec, ErrorAnswer};
pub use broker::Broker;
pub use call::{Call, ClientInfo};
