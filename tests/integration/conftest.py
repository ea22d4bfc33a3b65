"""Starts the real `shoal` binary for each test and gives tests a handle on it."""

import os
import pathlib
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHOAL_BIN = os.environ.get("SHOAL_BIN", str(ROOT / "target" / "release" / "shoal"))
S3S_FS_BIN = os.environ.get("S3S_FS_BIN") or shutil.which("s3s-fs") or str(
    pathlib.Path.home() / ".cargo" / "bin" / "s3s-fs")
S3_ACCESS_KEY, S3_SECRET_KEY, S3_BUCKET = "shoal-test-key", "shoal-test-secret", "shoal"
READY_TIMEOUT_S = 30


def free_port():
    return free_ports(1)[0]


def free_ports(count, taken=()):
    """`count` distinct free ports, none of them in `taken`: each is held bound until all are
    chosen (free_port() twice can give the same port twice)."""
    held = []
    try:
        while len(held) < count:
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            if s.getsockname()[1] in taken:
                s.close()
                continue
            held.append(s)
        return [s.getsockname()[1] for s in held]
    finally:
        for s in held:
            s.close()


def scrape_metrics(port):
    """The text of GET /metrics on a broker's metrics_listen port."""
    import urllib.request
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()


def metric_value(text, series):
    """The value of one series (`name` or `name{labels}`) in a scrape's text; None if absent."""
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return None


# SHOAL_TEST_COORDINATOR=postgres runs the brokers of the tests with their coordinator's log
# in PostgreSQL (one server for the session, a database per broker) instead of the data
# directory; =cluster also makes each broker a one-broker cluster, writing that log as a
# cluster's brokers share it. scripts/test.sh runs the coordinator-heavy tests again that way.
ON_CLUSTER = os.environ.get("SHOAL_TEST_COORDINATOR") == "cluster"
ON_POSTGRES = ON_CLUSTER or os.environ.get("SHOAL_TEST_COORDINATOR") == "postgres"
CLUSTER_CONFIG = "[cluster]\nenabled = true\nheartbeat_ms = 200\nlease_ms = 1500\n"
# For tests that look at objects on disk as files (data/objects/wal/<key>): the local store's
# other layout; the default, segments, keeps objects inside segment files.
FILES_LAYOUT = '[object_store]\nlocal_layout = "files"\n'


class Broker:
    """One shoal process on a loopback port with its own data directory."""

    def __init__(self, workdir, extra_config=""):
        self.workdir = pathlib.Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir = self.workdir / "data"
        self.port = free_port()
        self.config_path = self.workdir / "shoal.toml"
        if ON_POSTGRES and "[coordinator]" not in extra_config:
            extra_config = f"{extra_config}\n{shared_postgres().new_database_config()}"
            if ON_CLUSTER:
                extra_config += CLUSTER_CONFIG
        self.config_path.write_text(
            f'listen = "127.0.0.1:{self.port}"\n'
            f'data_dir = "{self.data_dir}"\n'
            f"{extra_config}\n"
        )
        self.log_path = self.workdir / "shoal.log"
        self.process = None

    @property
    def bootstrap(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [SHOAL_BIN, "--config", str(self.config_path)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.time() + READY_TIMEOUT_S
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"shoal exited early:\n{self.log()}")
            if self.answers_api_versions():
                return self
            time.sleep(0.05)
        raise RuntimeError(f"shoal did not answer within {READY_TIMEOUT_S}s:\n{self.log()}")

    def answers_api_versions(self):
        """Ready means answering a request: a bare TCP connect is not enough."""
        request = struct.pack(">hhih", 18, 0, 1, -1)  # ApiVersions v0, null client id
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(struct.pack(">i", len(request)) + request)
                return len(s.recv(4)) == 4
        except OSError:
            return False

    def wait_until_refused(self, timeout=10):
        """A killed process's listening socket can outlive it briefly (io_uring tears down
        asynchronously); wait until it is gone so new connections reach the next process."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    pass
            except OSError:
                return
            time.sleep(0.02)

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise
        return self.process.returncode if self.process else None

    def kill(self):
        code = self.stop(signal.SIGKILL)
        self.wait_until_refused()
        return code

    def log(self):
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@pytest.fixture(autouse=True)
def remove_the_test_directory(tmp_path):
    """Each test's directory goes when it ends (its brokers stopped by then: fixtures end in
    the reverse of their start, and this one starts first): a broker's segments are
    preallocated, tens of MiB each, and a full run would otherwise keep tens of GB."""
    yield
    shutil.rmtree(tmp_path, ignore_errors=True)


@pytest.fixture
def broker(tmp_path):
    b = Broker(tmp_path).start()
    yield b
    b.stop()
    assert "panicked" not in b.log(), b.log()


@pytest.fixture
def make_broker(tmp_path):
    """For tests that need their own config or restarts."""
    made = []

    def make(name="broker", extra_config=""):
        b = Broker(tmp_path / name, extra_config)
        made.append(b)
        return b

    yield make
    for b in made:
        b.stop()
        assert "panicked" not in b.log(), b.log()


class S3Server:
    """A real S3-compatible server (s3s-fs from crates.io) on a loopback port."""

    def __init__(self, workdir, port=None):
        self.root = pathlib.Path(workdir) / "s3root"
        (self.root / S3_BUCKET).mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.process = None
        self.log_path = pathlib.Path(workdir) / "s3s-fs.log"

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [S3S_FS_BIN, "--host", "127.0.0.1", "--port", str(self.port),
             "--access-key", S3_ACCESS_KEY, "--secret-key", S3_SECRET_KEY, str(self.root)],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + READY_TIMEOUT_S
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("s3s-fs did not start")

    def kill(self):
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def objects(self, prefix="shoal-test/wal"):
        wal = self.root / S3_BUCKET / prefix
        return sorted(p.name for p in wal.iterdir()) if wal.exists() else []

    def broker_config(self, endpoint=None, extra=""):
        return (
            "[object_store]\n"
            'kind = "s3"\n'
            f'endpoint = "{endpoint or self.endpoint}"\n'
            f'bucket = "{S3_BUCKET}"\n'
            'prefix = "shoal-test"\n'
            f'access_key_id = "{S3_ACCESS_KEY}"\n'
            f'secret_access_key = "{S3_SECRET_KEY}"\n'
            f"{extra}\n"
        )


@pytest.fixture
def s3_server(tmp_path):
    server = S3Server(tmp_path).start()
    yield server
    server.kill()


class PostgresServer:
    """A real PostgreSQL (Debian's package) in a temporary directory on a loopback port, with a
    SCRAM password. PostgreSQL refuses to run as root, so as root it runs as `nobody`."""

    USER, PASSWORD = "shoal", "pg-test-secret"

    def __init__(self, tls=False):
        # Not under pytest's tmp_path: its parents are closed to other users.
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="shoal-pg-"))
        self.port = free_port()
        self.ca_file = None
        self.tls_options = ""
        if tls:
            from tls_certs import CertificateAuthority
            ca = CertificateAuthority(self.dir / "ca")
            cert, key = ca.issue("postgres", "/CN=127.0.0.1", server=True)
            os.chmod(key, 0o600)
            if os.geteuid() == 0:
                for path in (ca.dir, cert, key):
                    os.chown(path, 65534, 65534)
            self.ca_file = ca.ca_cert
            self.tls_options = f" -c ssl=on -c ssl_cert_file={cert} -c ssl_key_file={key}"
        self.bin = self._binaries()
        (self.dir / "password").write_text(self.PASSWORD)
        if os.geteuid() == 0:
            for path in (self.dir, self.dir / "password"):
                os.chown(path, 65534, 65534)
        self._run("initdb", "-D", str(self.dir / "data"), "-U", self.USER,
                  "--auth=scram-sha-256", "--pwfile", str(self.dir / "password"), "-E", "UTF8",
                  "--no-sync")

    @staticmethod
    def _binaries():
        on_path = shutil.which("initdb")
        if on_path:  # a link into PostgreSQL's own directory, where createdb lives too
            return pathlib.Path(os.path.realpath(on_path)).parent
        versions = sorted(pathlib.Path("/usr/lib/postgresql").glob("*/bin/initdb"))
        assert versions, "PostgreSQL is not installed: apt-get install postgresql (see .ci/run)"
        return versions[-1].parent

    def _run(self, program, *args):
        command = [str(self.bin / program), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "nobody", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True)
        assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"

    def start(self):
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-l", str(self.dir / "log"), "-w",
                  "-o", f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1"
                  f"{self.tls_options}", "start")
        return self

    def stop(self):
        """At once, as a crash or a failover would."""
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")

    def new_database_config(self):
        """The [coordinator] section for a broker with a database of its own here."""
        self.databases = getattr(self, "databases", 0) + 1
        name = f"broker{self.databases}"
        environment = dict(os.environ, PGPASSWORD=self.PASSWORD)
        subprocess.run([str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                        "-U", self.USER, name], check=True, env=environment)
        return self.broker_config().replace("/postgres", f"/{name}", 1)

    def broker_config(self, password_file=None, header="[coordinator]\n"):
        """The [coordinator] section for a broker on this server; the password in a file.
        Without the header, the keys for a config that ends inside [coordinator] already."""
        if password_file is None:
            password_file = self.dir / "coordinator-password"
            password_file.write_text(self.PASSWORD + "\n")
        return (f"{header}kind = \"postgres\"\n"
                f'url = "postgres://{self.USER}@127.0.0.1:{self.port}/postgres{self._tls_query()}"\n'
                f'password_file = "{password_file}"\n')


    def _tls_query(self):
        return f"?sslmode=verify-full&sslrootcert={self.ca_file}" if self.ca_file else ""


_SHARED_POSTGRES = []


def shared_postgres():
    """One server for the whole session (SHOAL_TEST_COORDINATOR=postgres)."""
    if not _SHARED_POSTGRES:
        _SHARED_POSTGRES.append(PostgresServer().start())
    return _SHARED_POSTGRES[0]


def pytest_sessionfinish(session, exitstatus):
    for server in _SHARED_POSTGRES:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)


@pytest.fixture
def postgres():
    server = PostgresServer().start()
    yield server
    try:
        server.stop()
    except AssertionError:
        pass  # already stopped by the test
    shutil.rmtree(server.dir, ignore_errors=True)
