#!/usr/bin/env bash
# Regenerate src/lancelet/_proto from protos/lancelet/*.proto (needs grpcio-tools; `make protos`).
# The .proto files sit under a "lancelet/" prefix so that their names in protobuf's
# global descriptor pool ("lancelet/file.proto") cannot clash with another library's.
set -euo pipefail
cd "$(dirname "$0")"
out=src/lancelet/_proto
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python -m grpc_tools.protoc -I protos --python_out="$tmp" --mypy_out="$tmp" protos/lancelet/*.proto
rm -f "$out"/*_pb2.py "$out"/*_pb2.pyi
mv "$tmp"/lancelet/*_pb2.py "$tmp"/lancelet/*_pb2.pyi "$out"/
# protoc writes absolute imports (`from lancelet import file_pb2`); make them package-relative.
sed -i -E 's/^from lancelet import ([a-z0-9_]+_pb2) as /from . import \1 as /' "$out"/*_pb2.py "$out"/*_pb2.pyi
# The module name protoc records is the one pickle uses to find a message class again.
sed -i -E "s/'lancelet\.([a-z0-9_]+_pb2)'/'lancelet._proto.\1'/" "$out"/*_pb2.py
