"""Protobuf modules generated from protos/ by gen_protos.sh; do not edit."""
