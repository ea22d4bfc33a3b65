//! A real PostgreSQL for tests: Debian's `postgresql` binaries, a cluster made by initdb in a
//! temporary directory, started on a free loopback port with SCRAM-SHA-256 logins, stopped
//! and removed on drop. PostgreSQL refuses to run as root, so as root it runs as `nobody`.

use std::path::{Path, PathBuf};
use std::process::Command;

pub const USER: &str = "shoal";
pub const PASSWORD: &str = "test-secret";

pub struct TestPostgres {
    pub port: u16,
    dir: PathBuf,
    bin: PathBuf,
    as_root: bool,
    tls: bool,
}

impl TestPostgres {
    pub fn start() -> TestPostgres {
        Self::start_with(false)
    }

    /// With `ssl = on` and a certificate for 127.0.0.1 from a throwaway CA (`ca_file`).
    pub fn start_with_tls() -> TestPostgres {
        Self::start_with(true)
    }

    fn start_with(tls: bool) -> TestPostgres {
        let bin = binaries();
        let dir = fresh_directory();
        let as_root = is_root();
        std::fs::write(dir.join("password"), PASSWORD).unwrap();
        if as_root {
            for path in [dir.clone(), dir.join("password")] {
                std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
            }
        }
        let mut server = TestPostgres {
            port: free_port(),
            dir,
            bin,
            as_root,
            tls,
        };
        if tls {
            server.make_certificates();
        }
        server.run(
            "initdb",
            &[
                "-D",
                &server.data(),
                "-U",
                USER,
                "--auth=scram-sha-256",
                "--pwfile",
                &server.dir.join("password").display().to_string(),
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        // A free port is free only when asked: a server on another thread may take it before
        // this one binds, so a port already in use is tried again with another.
        for _ in 0..4 {
            match server.try_start_server() {
                Ok(()) => return server,
                Err(_) if server.log().contains("Address already in use") => {
                    server.port = free_port();
                }
                Err(e) => panic!("{e}"),
            }
        }
        server.start_server();
        server
    }

    pub fn url(&self) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/postgres", self.port)
    }

    /// The CA that signed the server's certificate (servers started with TLS).
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// A CA and a server certificate for 127.0.0.1 by the openssl command line; the key is
    /// the server user's alone, as PostgreSQL insists.
    fn make_certificates(&self) {
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(&self.dir)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
        ];
        openssl(
            &[
                &["req", "-x509"][..],
                &ec,
                &[
                    "-keyout",
                    "ca.key",
                    "-out",
                    "ca.pem",
                    "-days",
                    "2",
                    "-subj",
                    "/CN=Shoal PG Test CA",
                ],
            ]
            .concat(),
        );
        openssl(
            &[
                &["req"][..],
                &ec,
                &[
                    "-keyout",
                    "server.key",
                    "-out",
                    "server.csr",
                    "-subj",
                    "/CN=127.0.0.1",
                ],
            ]
            .concat(),
        );
        std::fs::write(self.dir.join("server.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ]);
        let key = self.dir.join("server.key");
        std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        if self.as_root {
            for name in ["server.key", "server.pem"] {
                std::os::unix::fs::chown(self.dir.join(name), Some(65534), Some(65534)).unwrap();
            }
        }
    }

    /// Starts the server (again, after `stop`), waiting until it accepts connections.
    pub fn start_server(&self) {
        if let Err(e) = self.try_start_server() {
            panic!("{e}");
        }
    }

    fn try_start_server(&self) -> Result<(), String> {
        let mut options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1",
            self.port,
            self.dir.display()
        );
        if self.tls {
            options.push_str(&format!(
                " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
                self.dir.join("server.pem").display(),
                self.dir.join("server.key").display()
            ));
        }
        self.try_run(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-o",
                &options,
                "-l",
                &self.dir.join("log").display().to_string(),
                "-w",
                "start",
            ],
        )
    }

    /// What the server has logged so far.
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    /// Stops the server at once, as a crash would.
    pub fn stop(&self) {
        self.run(
            "pg_ctl",
            &["-D", &self.data(), "-m", "immediate", "-w", "stop"],
        );
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    /// One of PostgreSQL's programs, run as `nobody` when the tests run as root.
    fn command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        if self.as_root {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    fn run(&self, program: &str, args: &[&str]) {
        if let Err(e) = self.try_run(program, args) {
            panic!("{e}");
        }
    }

    fn try_run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let output = self.command(program).args(args).output().unwrap();
        if output.status.success() {
            return Ok(());
        }
        Err(format!(
            "{program} {args:?} failed: {}{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            self.log()
        ))
    }
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        let data = self.data();
        let stop = ["-D", &data, "-m", "immediate", "stop"];
        let _ = self.command("pg_ctl").args(stop).output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// initdb and pg_ctl: on the PATH, or in Debian's versioned directory.
fn binaries() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file());
    if let Some(dir) = on_path {
        return dir;
    }
    let debian = Path::new("/usr/lib/postgresql");
    let mut versions: Vec<PathBuf> = std::fs::read_dir(debian)
        .map(|entries| entries.flatten().map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    versions.sort();
    versions
        .pop()
        .filter(|dir| dir.join("initdb").is_file())
        .expect("PostgreSQL is not installed: apt-get install postgresql (see .ci/run)")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// A directory of this server's own. Tests in one process start servers on several threads
/// at once, and a clock's nanoseconds can be the same on two of them (it happened in CI, and
/// two initdb runs shared one data directory), so the name also counts the servers this
/// process made, and `create_dir` refuses a directory that is already there.
fn fresh_directory() -> PathBuf {
    static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    loop {
        let dir = std::env::temp_dir().join(format!(
            "shoal-pg-{}-{}-{}",
            std::process::id(),
            MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        match std::fs::create_dir(&dir) {
            Ok(()) => return dir,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => panic!("cannot make {}: {e}", dir.display()),
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
