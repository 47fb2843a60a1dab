#!/usr/bin/env bash
# What mpirun starts on every rank: the stand-in's OpenAI server (rank 0 serves HTTP, every rank
# joins each request through MPI collectives).
exec python3 -u /opt/nim/standin/server.py "$@"
