# Starting and stopping a release broker from the benchmark scripts (sourced, not run).
# Uses $bin (the binaries' directory) and makes $work, a scratch directory removed on exit
# together with any broker still running.

work=$(mktemp -d)
broker_pid=""
cleanup() {
  [[ -n "$broker_pid" ]] && kill -TERM "$broker_pid" 2>/dev/null && wait "$broker_pid" || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_for_port() { # port
  for _ in $(seq 100); do
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return
    sleep 0.1
  done
}

# Sets broker_pid, BOOTSTRAP, METRICS and CONFIG; the coordinator shares the first shard CPU.
start_broker() { # name shard_cpus
  local name=$1 shard_cpus=$2
  local port metrics
  port=$(free_port)
  metrics=$(free_port)
  cat >"$work/$name.toml" <<TOML
listen = "127.0.0.1:$port"
metrics_listen = "127.0.0.1:$metrics"
data_dir = "$work/$name-data"
[shards]
cores = [$shard_cpus]
[coordinator]
core = ${shard_cpus%%,*}
TOML
  "$bin/shoal" --config "$work/$name.toml" >"$work/$name.log" 2>&1 &
  broker_pid=$!
  wait_for_port "$port"
  BOOTSTRAP=127.0.0.1:$port
  METRICS=127.0.0.1:$metrics
  CONFIG=$work/$name.toml
}

stop_broker() {
  kill -TERM "$broker_pid" && wait "$broker_pid" || true
  broker_pid=""
}
