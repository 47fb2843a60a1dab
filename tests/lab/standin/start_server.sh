#!/usr/bin/env bash
# What every rank runs under launch contract leader_address (SGLang-based NIMs): the stand-in's
# server; rank 0 (NIM_LEADER_ROLE=1) holds the rendezvous on MASTER_ADDR:MASTER_PORT and serves
# HTTP, every other rank joins it.
exec python3 -u /opt/nim/standin/server.py --transport leader_address "$@"
