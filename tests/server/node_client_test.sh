#!/usr/bin/env bash
# Starts a real slackswap-server on loopback and runs the Node.js client
# against it. @grpc/grpc-js and @grpc/proto-loader are installed from npm into
# NODE_DIR once and reused.
# Usage: node_client_test.sh SERVER_BIN PROTO_DIR NODE_DIR
set -euo pipefail
server_bin=$1
proto_dir=$2
node_dir=$3
here=$(cd "$(dirname "$0")" && pwd)

if [ ! -d "$node_dir/node_modules/@grpc/grpc-js" ] || \
   [ ! -d "$node_dir/node_modules/@grpc/proto-loader" ]; then
  mkdir -p "$node_dir"
  npm install --silent --no-audit --no-fund --prefix "$node_dir" \
    @grpc/grpc-js@1 @grpc/proto-loader@0.7 >/dev/null
fi

log=$(mktemp)
"$server_bin" --listen 127.0.0.1:0 --metrics "" >"$log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do
  grep -q "listening on port" "$log" && break
  sleep 0.1
done
port=$(sed -n 's/^listening on port \([0-9]*\)$/\1/p' "$log")
if [ -z "$port" ]; then
  echo "server did not start:"; cat "$log"; exit 1
fi
NODE_PATH="$node_dir/node_modules" node "$here/node_client.js" "127.0.0.1:$port" "$proto_dir" \
  /usr/share/grpc-proto
