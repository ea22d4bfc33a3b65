//! The client against a real PostgreSQL (started by the test): logins, queries with binary
//! parameters, errors with their SQLSTATE, deadlines, a server that goes away and comes back,
//! and migrations applied once even when two brokers start together.

use std::time::Duration;

use glommio::LocalExecutorBuilder;
use shoal_pg::testing::{TestPostgres, PASSWORD};
use shoal_pg::{migrations, Connection, Migration, Param, PgConfig, PgError};

fn run<F, Fut>(f: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    LocalExecutorBuilder::default()
        .io_memory(1 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

fn config(server: &TestPostgres) -> PgConfig {
    PgConfig::from_url(&server.url(), Some(PASSWORD.into())).unwrap()
}

#[test]
fn logs_in_with_scram_and_round_trips_binary_values() {
    let server = TestPostgres::start();
    let config = config(&server);
    run(move || async move {
        let mut c = Connection::connect(&config).await.unwrap();
        let blob: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        let rows = c
            .query(
                "SELECT $1::int8 + 1, $2::text || '!', $3::bytea, $4::int8 IS NULL",
                &[
                    Param::I64(41),
                    Param::Text("hé"),
                    Param::Bytes(&blob),
                    Param::Null,
                ],
            )
            .await
            .unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].i64(0).unwrap(), 42);
        assert_eq!(rows[0].text(1).unwrap(), "hé!");
        assert_eq!(&rows[0].bytes(2).unwrap().unwrap()[..], &blob[..]);
        assert_eq!(&rows[0].bytes(3).unwrap().unwrap()[..], &[1]);
        c.batch_execute("CREATE TABLE t (k int8 PRIMARY KEY, v text)")
            .await
            .unwrap();
        let inserted = c
            .execute(
                "INSERT INTO t SELECT g, 'v' FROM generate_series(1, $1) g",
                &[Param::I64(500)],
            )
            .await
            .unwrap();
        assert_eq!(inserted, 500);
        let rows = c.query("SELECT k FROM t ORDER BY k", &[]).await.unwrap();
        assert_eq!(rows.len(), 500);
        assert_eq!(rows[499].i64(0).unwrap(), 500);
        c.close().await;
    });
}

#[test]
fn a_wrong_password_and_a_missing_one_are_refused_clearly() {
    let server = TestPostgres::start();
    let mut wrong = config(&server);
    wrong.password = Some("not-it".into());
    let mut none = config(&server);
    none.password = None;
    run(move || async move {
        let e = Connection::connect(&wrong).await.err().expect("refused");
        assert_eq!(e.code(), Some("28P01"), "{e}");
        assert!(!e.is_transient());
        let e = Connection::connect(&none).await.err().expect("refused");
        assert!(matches!(e, PgError::PasswordRequired), "{e}");
    });
}

#[test]
fn server_errors_keep_the_connection_and_deadlines_cancel_long_statements() {
    let server = TestPostgres::start();
    let mut config = config(&server);
    config.statement_timeout = Duration::from_millis(300);
    run(move || async move {
        let mut c = Connection::connect(&config).await.unwrap();
        let e = c.query("SELECT 1/0", &[]).await.unwrap_err();
        assert_eq!(e.code(), Some("22012"), "{e}");
        assert!(!c.is_broken(), "a server error leaves the protocol in step");
        let started = std::time::Instant::now();
        let e = c.query("SELECT pg_sleep(10)", &[]).await.unwrap_err();
        assert_eq!(e.code(), Some("57014"), "statement_timeout cancels it: {e}");
        assert!(started.elapsed() < Duration::from_secs(3));
        let rows = c.query("SELECT 7::int4", &[]).await.unwrap();
        assert_eq!(rows[0].i64(0).unwrap(), 7, "and the connection goes on");
    });
}

#[test]
fn a_stopped_server_is_a_transient_error_and_a_new_connection_works_once_it_is_back() {
    let server = std::sync::Arc::new(TestPostgres::start());
    let config = config(&server);
    let s = server.clone();
    run(move || async move {
        let mut c = Connection::connect(&config).await.unwrap();
        s.stop();
        let e = c.query("SELECT 1::int8", &[]).await.unwrap_err();
        assert!(e.is_transient(), "{e}");
        let e = Connection::connect(&config)
            .await
            .err()
            .expect("nobody listens");
        assert!(e.is_transient(), "{e}");
        s.start_server();
        let mut again = Connection::connect(&config).await.unwrap();
        assert_eq!(
            again.query("SELECT 1::int8", &[]).await.unwrap()[0]
                .i64(0)
                .unwrap(),
            1
        );
    });
}

const SCHEMA: [Migration; 2] = [
    Migration {
        version: 1,
        name: "a table",
        sql: "CREATE TABLE a (id int8 PRIMARY KEY)",
    },
    Migration {
        version: 2,
        name: "a column",
        sql: "ALTER TABLE a ADD COLUMN note text",
    },
];

#[test]
fn migrations_apply_once_in_order_even_when_two_brokers_start_together() {
    let server = TestPostgres::start();
    let config = config(&server);
    run(move || async move {
        let (mut a, mut b) = (
            Connection::connect(&config).await.unwrap(),
            Connection::connect(&config).await.unwrap(),
        );
        let (first, second) = futures::join!(
            migrations::apply(&mut a, &SCHEMA),
            migrations::apply(&mut b, &SCHEMA)
        );
        let mut applied = [first.unwrap(), second.unwrap()];
        applied.sort();
        assert_eq!(
            applied,
            [vec![], vec![1, 2]],
            "one of them applied both, the other none"
        );
        assert!(migrations::apply(&mut a, &SCHEMA).await.unwrap().is_empty());
        a.execute("INSERT INTO a VALUES (1, 'x')", &[])
            .await
            .unwrap();
    });
}

#[test]
fn a_changed_or_unknown_migration_is_refused() {
    let server = TestPostgres::start();
    let config = config(&server);
    run(move || async move {
        let mut c = Connection::connect(&config).await.unwrap();
        migrations::apply(&mut c, &SCHEMA).await.unwrap();
        let mut edited = SCHEMA;
        edited[1].sql = "ALTER TABLE a ADD COLUMN other text";
        let e = migrations::apply(&mut c, &edited).await.unwrap_err();
        assert!(e.to_string().contains("differs"), "{e}");
        let e = migrations::apply(&mut c, &SCHEMA[..1]).await.unwrap_err();
        assert!(e.to_string().contains("does not know"), "{e}");
        let failing = Migration {
            version: 3,
            name: "bad",
            sql: "ALTER TABLE nowhere ADD x int",
        };
        let e = migrations::apply(&mut c, &[SCHEMA[0], SCHEMA[1], failing])
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("42P01"), "{e}");
        let rows = c
            .query("SELECT max(version) FROM shoal_schema_migrations", &[])
            .await
            .unwrap();
        assert_eq!(
            rows[0].i64(0).unwrap(),
            2,
            "the failed migration left nothing behind"
        );
        assert_eq!(c.transaction_status(), b'I');
    });
}

fn tls_config(ca_file: &std::path::Path) -> std::sync::Arc<rustls::ClientConfig> {
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for ca in rustls_pki_types::CertificateDer::pem_file_iter(ca_file).unwrap() {
        roots.add(ca.unwrap()).unwrap();
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    std::sync::Arc::new(config)
}

#[test]
fn verify_full_speaks_tls_and_refuses_a_server_it_cannot_verify() {
    let server = TestPostgres::start_with_tls();
    let url = format!("{}?sslmode=verify-full", server.url());
    let mut good = PgConfig::from_url(&url, Some(PASSWORD.into())).unwrap();
    good.tls = Some(tls_config(&server.ca_file()));
    let mut untrusted = good.clone();
    let stranger = TestPostgres::start_with_tls();
    untrusted.tls = Some(tls_config(&stranger.ca_file()));
    let plain = TestPostgres::start();
    let mut no_tls_there = PgConfig::from_url(
        &format!("{}?sslmode=verify-full", plain.url()),
        Some(PASSWORD.into()),
    )
    .unwrap();
    no_tls_there.tls = good.tls.clone();
    run(move || async move {
        let mut c = Connection::connect(&good).await.unwrap();
        let rows = c
            .query(
                "SELECT ssl::int4 FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(rows[0].i64(0).unwrap(), 1, "the session is encrypted");
        let e = Connection::connect(&untrusted)
            .await
            .err()
            .expect("another CA's server");
        assert!(e.to_string().contains("certificate"), "{e}");
        let e = Connection::connect(&no_tls_there)
            .await
            .err()
            .expect("ssl = off");
        assert!(e.to_string().contains("does not accept TLS"), "{e}");
    });
}

#[test]
fn statements_sent_together_answer_in_order_and_a_failure_leaves_the_connection_usable() {
    let server = TestPostgres::start();
    let config = config(&server);
    run(move || async move {
        let mut c = Connection::connect(&config).await.unwrap();
        c.batch_execute("CREATE TABLE kv (k int8 PRIMARY KEY)")
            .await
            .unwrap();
        // A transaction begun and read in one write, an insert and its commit in another.
        let rows = c
            .simple_then_query(
                "BEGIN",
                "SELECT count(*) FROM kv WHERE k > $1",
                &[Param::I64(0)],
            )
            .await
            .unwrap();
        assert_eq!(rows[0].i64(0).unwrap(), 0);
        let touched = c
            .execute_then_simple("INSERT INTO kv VALUES ($1)", &[Param::I64(7)], "COMMIT")
            .await
            .unwrap();
        assert_eq!(touched, 1);
        assert_eq!(c.transaction_status(), b'I', "committed");
        // A failing insert: its error comes back and the COMMIT after it only ends the
        // failed transaction; nothing of it stays.
        c.batch_execute("BEGIN").await.unwrap();
        c.execute("INSERT INTO kv VALUES (8)", &[]).await.unwrap();
        let failed = c
            .execute_then_simple("INSERT INTO kv VALUES ($1)", &[Param::I64(7)], "COMMIT")
            .await
            .unwrap_err();
        assert_eq!(failed.code(), Some("23505"), "{failed}");
        assert!(!c.is_broken());
        let rows = c.query("SELECT count(*) FROM kv", &[]).await.unwrap();
        assert_eq!(
            rows[0].i64(0).unwrap(),
            1,
            "the failed transaction left nothing"
        );
    });
}
