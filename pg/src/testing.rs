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
}

impl TestPostgres {
    pub fn start() -> TestPostgres {
        let bin = binaries();
        let dir = std::env::temp_dir().join(format!(
            "shoal-pg-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let as_root = is_root();
        std::fs::write(dir.join("password"), PASSWORD).unwrap();
        if as_root {
            for path in [dir.clone(), dir.join("password")] {
                std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
            }
        }
        let port = free_port();
        let server = TestPostgres {
            port,
            dir,
            bin,
            as_root,
        };
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
        server.start_server();
        server
    }

    pub fn url(&self) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts the server (again, after `stop`), waiting until it accepts connections.
    pub fn start_server(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1",
            self.port,
            self.dir.display()
        );
        self.run(
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
        );
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
        let output = self.command(program).args(args).output().unwrap();
        assert!(
            output.status.success(),
            "{program} {args:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
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

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
