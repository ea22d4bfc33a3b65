//! Macros that declare a shard's metrics of one kind, each metric once: the field code updates,
//! its family's name and help, and a histogram's bucket bounds. Each generates the struct of
//! live values, the struct of their copies that a scrape carries between shards, and the
//! families in field order, so a new metric is one line of its table plus its use.

/// Counters: summed over shards.
macro_rules! shard_counters {
    ($(#[$doc:meta])* $live:ident => $copy:ident {
        $($(#[$field_doc:meta])* $field:ident: $name:literal, $help:literal;)*
    }) => {
        $(#[$doc])*
        #[derive(Default)]
        pub struct $live {
            $($(#[$field_doc])* pub $field: Counter,)*
        }

        /// The counters' values at a scrape, summed over the shards merged into them.
        #[derive(Debug, Clone, Default)]
        pub struct $copy {
            $(pub $field: u64,)*
        }

        impl $live {
            pub const FAMILIES: &'static [Family] = &[$(Family::counter($name, $help),)*];

            pub fn copy(&self) -> $copy {
                $copy { $($field: self.$field.get(),)* }
            }
        }

        impl $copy {
            pub fn merge(&mut self, other: &$copy) {
                $(self.$field = self.$field.wrapping_add(other.$field);)*
            }

            /// In `FAMILIES` order.
            pub fn values(&self) -> Vec<u64> {
                vec![$(self.$field,)*]
            }
        }
    };
}

/// Histograms: their buckets summed over shards.
macro_rules! shard_histograms {
    ($(#[$doc:meta])* $live:ident => $copy:ident {
        $($(#[$field_doc:meta])* $field:ident: $name:literal, $bounds:expr, $help:literal;)*
    }) => {
        $(#[$doc])*
        pub struct $live {
            $($(#[$field_doc])* pub $field: Histogram,)*
        }

        /// The histograms at a scrape, summed over the shards merged into them.
        #[derive(Debug, Clone)]
        pub struct $copy {
            $(pub $field: HistogramSnapshot,)*
        }

        impl Default for $live {
            fn default() -> $live {
                $live { $($field: Histogram::new(&$bounds),)* }
            }
        }

        impl $live {
            pub const FAMILIES: &'static [Family] = &[$(Family::histogram($name, $help),)*];

            pub fn copy(&self) -> $copy {
                $copy { $($field: self.$field.snapshot(),)* }
            }
        }

        impl $copy {
            pub fn merge(&mut self, other: &$copy) {
                $(self.$field.merge(&other.$field);)*
            }

            /// In `FAMILIES` order.
            pub fn values(&self) -> Vec<&HistogramSnapshot> {
                vec![$(&self.$field,)*]
            }
        }
    };
}

/// Gauges: one series a shard, labelled by the shard's index.
macro_rules! shard_gauges {
    ($(#[$doc:meta])* $live:ident => $copy:ident {
        $($(#[$field_doc:meta])* $field:ident: $name:literal, $help:literal;)*
    }) => {
        $(#[$doc])*
        #[derive(Default)]
        pub struct $live {
            $($(#[$field_doc])* pub $field: Gauge,)*
        }

        /// One shard's gauges at a scrape.
        #[derive(Debug, Clone, Default)]
        pub struct $copy {
            $(pub $field: u64,)*
        }

        impl $live {
            pub const FAMILIES: &'static [Family] =
                &[$(Family::gauge($name, $help).by(&["shard"]),)*];

            pub fn copy(&self) -> $copy {
                $copy { $($field: self.$field.get(),)* }
            }
        }

        impl $copy {
            /// In `FAMILIES` order.
            pub fn values(&self) -> Vec<u64> {
                vec![$(self.$field,)*]
            }
        }
    };
}
