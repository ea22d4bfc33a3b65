//! `shoal`: a Kafka-compatible broker for diskless topics.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use shoal::config::BrokerConfig;
use shoal::dynamic_configs::LiveConfigs;
use shoal::{
    cluster, datadir, handlers, ownership, quotas::QuotaBoard, security, server, EngineError,
};
use shoal_net::start_retry::retry_transient;
use shoal_shards::{Latch, RuntimeConfig, ServeFn};
use shoal_wal::{ObjectStore, StoreConfig, WalError};

/// The release and the commit it was built from.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("SHOAL_COMMIT"), ")");

/// Shoal: a Kafka-compatible broker whose topics live in object storage.
#[derive(Parser, Debug)]
#[command(version = VERSION, about)]
struct Args {
    /// TOML configuration file (see shoal.example.toml); defaults apply without one.
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Kafka listener address, overriding the file's `listen`.
    #[arg(long)]
    listen: Option<std::net::SocketAddr>,
    /// Data directory, overriding the file's `data_dir`.
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Manage cluster mirrors (KIP-1279) on a running broker.
    Mirror {
        #[command(subcommand)]
        command: shoal_cli::mirrors::MirrorCommand,
        // Last: its help heading holds for the flags after it.
        #[command(flatten)]
        target: shoal_cli::Target,
    },
    /// The live brokers of the cluster a running broker belongs to.
    Cluster {
        #[command(subcommand)]
        command: shoal_cli::cluster::ClusterCommand,
        #[command(flatten)]
        target: shoal_cli::Target,
    },
    /// The transactional ids a running broker coordinates, and their transactions.
    Transactions {
        #[command(subcommand)]
        command: shoal_cli::transactions::TransactionsCommand,
        #[command(flatten)]
        target: shoal_cli::Target,
    },
    /// Report the state of a data directory without starting the broker: the metadata
    /// files, what recovery would do, and a CRC check of every stored batch. Exits 0 when
    /// the broker would start with every batch intact, 2 otherwise.
    Check,
    /// Make a damaged data directory startable. Without --accept-loss only repairs that lose
    /// nothing are made; with it, history is cut at the first damaged or missing metadata
    /// log. Damaged files are moved to <data-dir>/coordinator/damaged, never deleted.
    Repair {
        /// Start from the last good point, setting aside the records after it.
        #[arg(long)]
        accept_loss: bool,
    },
    /// List the APIs this broker serves: key, versions, and what the ACLs must allow.
    Apis,
    /// Topics: list, create, describe, delete, alter (against any Kafka broker).
    Topic {
        #[command(flatten)]
        target: shoal_cli::Target,
        #[command(subcommand)]
        command: shoal_cli::topics::TopicCommand,
    },
    /// Consumer groups: list, describe (members, offsets, lag), reset-offsets.
    Group {
        #[command(flatten)]
        target: shoal_cli::Target,
        #[command(subcommand)]
        command: shoal_cli::groups::GroupCommand,
    },
    /// ACL bindings: list, create, delete.
    Acl {
        #[command(flatten)]
        target: shoal_cli::Target,
        #[command(subcommand)]
        command: shoal_cli::acls::AclCommand,
    },
    /// SCRAM users: list, create (set a password), delete.
    User {
        #[command(flatten)]
        target: shoal_cli::Target,
        #[command(subcommand)]
        command: shoal_cli::users::UserCommand,
    },
    /// Delegation tokens (KIP-48): create, list, renew, expire.
    Token {
        #[command(flatten)]
        target: shoal_cli::Target,
        #[command(subcommand)]
        command: shoal_cli::tokens::TokenCommand,
    },
    /// The schema registry: list, get, register, check, delete (Confluent's REST API).
    Schema {
        #[command(subcommand)]
        command: shoal_cli::schemas::SchemaCommand,
        #[command(flatten)]
        target: shoal_cli::schemas::RegistryTarget,
    },
    /// Records from standard input, a line each (or JSON), to a topic.
    Produce {
        #[command(flatten)]
        args: shoal_cli::produce::ProduceArgs,
        // Last: its help heading holds for the flags after it.
        #[command(flatten)]
        target: shoal_cli::Target,
    },
    /// A topic's records to standard output, from a start to the end (or on, --follow).
    Consume {
        #[command(flatten)]
        args: shoal_cli::consume::ConsumeArgs,
        // Last: its help heading holds for the flags after it.
        #[command(flatten)]
        target: shoal_cli::Target,
    },
    /// A running broker's health and readiness, from its metrics listener (`/health`,
    /// `/ready`). Exits 0 when ready, 1 when up but not ready, 2 when it does not answer.
    Status {
        /// The broker's `metrics_listen`; by default the one in --config.
        #[arg(long)]
        metrics: Option<std::net::SocketAddr>,
    },
}

fn main() {
    let args = Args::parse();
    // The log's settings only: a file that does not load is reported once the log is up.
    let log =
        BrokerConfig::load(args.config.as_deref()).map_or_else(|_| Default::default(), |c| c.log);
    shoal::log_filter::init(&log);
    match args.command {
        Some(Command::Topic { target, command }) => {
            exit_with(shoal_cli::topics::run(&target, command), "topic")
        }
        Some(Command::Group { target, command }) => {
            exit_with(shoal_cli::groups::run(&target, command), "group")
        }
        Some(Command::Acl { target, command }) => {
            exit_with(shoal_cli::acls::run(&target, command), "acl")
        }
        Some(Command::User { target, command }) => {
            exit_with(shoal_cli::users::run(&target, command), "user")
        }
        Some(Command::Token { target, command }) => {
            exit_with(shoal_cli::tokens::run(&target, command), "token")
        }
        Some(Command::Schema { target, command }) => {
            exit_with(shoal_cli::schemas::run(&target, command), "schema")
        }
        Some(Command::Produce { target, args }) => {
            exit_with(shoal_cli::produce::run(&target, args), "produce")
        }
        Some(Command::Consume { target, args }) => {
            exit_with(shoal_cli::consume::run(&target, args), "consume")
        }
        Some(Command::Mirror { target, command }) => {
            exit_with(shoal_cli::mirrors::run(&target, command), "mirror")
        }
        Some(Command::Cluster { target, command }) => {
            exit_with(shoal_cli::cluster::run(&target, command), "cluster")
        }
        Some(Command::Transactions { target, command }) => exit_with(
            shoal_cli::transactions::run(&target, command),
            "transactions",
        ),
        _ => {}
    }
    if let Some(Command::Status { metrics }) = &args.command {
        let from_file = || {
            BrokerConfig::load(args.config.as_deref())
                .ok()
                .and_then(|c| c.metrics_listen)
        };
        let Some(metrics) = metrics.or_else(from_file) else {
            eprintln!("shoal status: give --metrics or a --config with metrics_listen");
            std::process::exit(2);
        };
        std::process::exit(shoal_cli::status::status(metrics));
    }
    if let Some(Command::Apis) = args.command {
        print!("{}", handlers::registry::describe_apis());
        return;
    }
    if matches!(args.command, Some(Command::Check | Command::Repair { .. })) {
        std::process::exit(run_data_dir_command(args));
    }
    if let Err(e) = run(args) {
        tracing::error!(error = %e, "shoal stopped");
        std::process::exit(1);
    }
}

/// Refuses to start, with a clear message, if the object store cannot serve: at once on a
/// definitive answer (no such bucket, refused credentials, a name that does not resolve),
/// after `patience` of passing failures (resets, timeouts, 503s) tried again with backoff.
fn check_object_store(store: &StoreConfig, patience: Duration) -> Result<(), EngineError> {
    let store = store.clone();
    glommio::LocalExecutorBuilder::default()
        .name("store-check")
        .io_memory(0)
        .spawn(move || async move {
            let opened = ObjectStore::open(&store).map_err(|e| e.to_string())?;
            let step = "the object store's check";
            retry_transient(step, patience, WalError::is_transient, || opened.check()).await
        })
        .map_err(|e| EngineError::Config(format!("object store check: {e}")))?
        .join()
        .map_err(|e| EngineError::Config(format!("object store check: {e}")))?
        .map_err(|e| EngineError::Config(format!("object store: {e}")))
}

/// Ends an admin command: 0, or its error and exit status.
fn exit_with(outcome: Result<(), shoal_cli::AdminError>, command: &str) -> ! {
    match outcome {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("shoal {command}: {e}");
            std::process::exit(e.exit_status());
        }
    }
}

/// The configuration the command line names, validated, with an absolute data directory.
fn load_config(args: &Args) -> Result<BrokerConfig, EngineError> {
    let mut config = BrokerConfig::load(args.config.as_deref())?;
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    if let Some(data_dir) = &args.data_dir {
        config.data_dir = data_dir.clone();
    }
    config.validate()?;
    std::fs::create_dir_all(&config.data_dir)?;
    // io_uring opens (glommio) refuse relative paths: resolve the data directory once here.
    config.data_dir = std::fs::canonicalize(&config.data_dir)?;
    Ok(config)
}

/// `check` and `repair`: 0 when the directory is (now) fine, 2 when it is not, 1 on error.
fn run_data_dir_command(args: Args) -> i32 {
    let outcome = load_config(&args).and_then(|config| match args.command {
        Some(Command::Repair { accept_loss }) => {
            datadir::repair_data_dir(&config, accept_loss).map(|()| true)
        }
        _ => datadir::check(&config),
    });
    match outcome {
        Ok(true) => 0,
        Ok(false) => 2,
        Err(e) => {
            eprintln!("shoal: {e}");
            1
        }
    }
}

fn run(args: Args) -> Result<(), EngineError> {
    let config = load_config(&args)?;
    let _lock = ownership::DataDirLock::acquire(&config.data_dir)?;
    for listener in config.listeners()? {
        ownership::check_listen_address_free(listener.address)?;
    }
    let runtime = config.runtime()?;
    check_object_store(&runtime.store, runtime.startup_timeout)?;
    tracing::info!(
        listen = %config.listen,
        data_dir = %config.data_dir.display(),
        shard_cores = ?runtime.shard_cores,
        coordinator_core = runtime.coordinator_core,
        commit_interval_ms = config.produce.commit_interval_ms,
        version = VERSION,
        "starting shoal"
    );

    let shutdown = Arc::new(Latch::new(1));
    let mut signals = Signals::new([SIGTERM, SIGINT])?;
    let on_signal = shutdown.clone();
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            tracing::info!(signal, "shutting down: draining buffers");
            on_signal.release();
        }
    });

    let tls = tls_server(&config)?;
    let membership = join_cluster(&config, &runtime)?;
    let quotas = QuotaBoard::new(config.quotas.windows(), runtime.shard_cores.len());
    let listeners: Vec<_> = (config.listeners()?.iter())
        .map(|l| shoal_iceberg_writer::BrokerListener {
            protocol: l.protocol,
            address: l.address,
        })
        .collect();
    if let Some(setup) = config.iceberg.setup(
        &config.data_dir,
        &listeners,
        &config.schema_registry,
        &config.object_store.store(&config.data_dir),
        runtime.coordinator_database.as_ref(),
    )? {
        shoal_iceberg_writer::start(setup, runtime.duties.clone())?;
    }
    let config = Arc::new(config);
    let limits =
        server::ConnectionLimits::new(config.max_connections, config.max_connections_per_ip);
    let live = LiveConfigs::new(config.clone(), runtime.live.clone(), limits, tls.clone());
    let oauth = oauth_validator(&config)?;
    let serve: ServeFn = Arc::new(move |shard| {
        Box::pin(server::serve_shard(
            shard,
            config.clone(),
            live.clone(),
            server::Security {
                tls: tls.clone(),
                oauth: oauth.clone(),
            },
            membership.clone(),
            quotas.clone(),
        ))
    });
    shoal_shards::run(runtime, serve, shutdown)?;
    tracing::info!("shoal stopped cleanly");
    Ok(())
}

/// The listeners' (and the schema registry's) TLS server, watching its files, where one
/// uses TLS.
fn tls_server(config: &BrokerConfig) -> Result<Option<Arc<security::TlsServer>>, EngineError> {
    let tls_wanted = config.listeners()?.iter().any(|l| l.protocol.uses_tls())
        || (config.schema_registry.listen.is_some() && config.schema_registry.tls);
    let tls = match tls_wanted {
        true => {
            let tls = Arc::new(security::TlsServer::load(&config.ssl)?);
            tls.clone().watch()?;
            Some(tls)
        }
        false => None,
    };
    Ok(tls)
}

/// In a cluster, this broker's membership (registered, heartbeating its lease).
fn join_cluster(
    config: &BrokerConfig,
    runtime: &RuntimeConfig,
) -> Result<Option<Arc<cluster::membership::Membership>>, EngineError> {
    let membership = match (&runtime.coordinator_database, config.cluster.enabled) {
        (Some(database), true) => {
            let me = cluster::Member {
                node_id: config.node_id,
                listeners: config
                    .listeners()?
                    .into_iter()
                    .map(|l| (l.name, l.advertised_host, l.advertised_port))
                    .collect(),
                rack: config.cluster.rack.clone(),
            };
            let lease = Duration::from_millis(config.cluster.lease_ms);
            let heartbeat = Duration::from_millis(config.cluster.heartbeat_ms);
            let lapses = runtime.lease_lapses.clone();
            let patience = runtime.startup_timeout;
            let membership = cluster::membership::start(
                database.clone(),
                me,
                lease,
                heartbeat,
                lapses,
                patience,
            )?;
            tracing::info!(node_id = config.node_id, rack = ?config.cluster.rack, "joined the cluster");
            Some(membership)
        }
        _ => None,
    };
    Ok(membership)
}

/// The OAUTHBEARER token validator, watching its keys, where the mechanism is enabled.
fn oauth_validator(
    config: &BrokerConfig,
) -> Result<Option<Arc<security::OAuthValidator>>, EngineError> {
    let oauth = match config
        .sasl
        .enabled_mechanisms
        .iter()
        .any(|m| m == "OAUTHBEARER")
    {
        true => {
            let validator = Arc::new(security::OAuthValidator::load(&config.sasl.oauthbearer)?);
            validator.clone().watch()?;
            Some(validator)
        }
        false => None,
    };
    Ok(oauth)
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    #[test]
    fn the_command_line_is_well_formed() {
        super::Args::command().debug_assert();
    }

    #[test]
    fn connection_flags_go_before_or_after_the_subcommand() {
        for line in [
            "shoal topic --bootstrap h:1 --format json create orders -p 3",
            "shoal topic create orders -p 3 --bootstrap h:1 --format json",
            "shoal topic create -b h:1 orders --partitions 3 --format json",
        ] {
            let args = super::Args::try_parse_from(line.split(' ')).expect(line);
            let Some(super::Command::Topic { target, .. }) = args.command else {
                panic!("{line}: not a topic command");
            };
            assert_eq!(target.bootstrap, "h:1", "{line}");
            assert_eq!(target.format, shoal_cli::Format::Json, "{line}");
        }
        for line in [
            "shoal cluster status --bootstrap h:2 -X security.protocol=SASL_SSL",
            "shoal mirror -b h:2 -X security.protocol=SASL_SSL list",
            "shoal transactions list -b h:2 -X security.protocol=SASL_SSL",
        ] {
            let args = super::Args::try_parse_from(line.split(' ')).expect(line);
            let target = match args.command {
                Some(super::Command::Cluster { target, .. }) => target,
                Some(super::Command::Mirror { target, .. }) => target,
                Some(super::Command::Transactions { target, .. }) => target,
                _ => panic!("{line}: not parsed as its command"),
            };
            assert_eq!(target.bootstrap, "h:2", "{line}");
            let setting = ("security.protocol".to_string(), "SASL_SSL".to_string());
            assert_eq!(target.client_config, vec![setting], "{line}");
        }
    }
}
