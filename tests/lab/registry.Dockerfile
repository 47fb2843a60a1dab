# The lab's container registry: Debian's own docker-registry (the CNCF distribution registry), for
# the lab and the tests only. TLS and basic auth are configured at run time by registry.sh.
ARG BASE
FROM ${BASE}
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-registry apache2-utils \
    && apt-get clean && rm -rf /var/lib/apt/lists/*
EXPOSE 5000
CMD ["/usr/bin/docker-registry", "serve", "/srv/registry/config.yml"]
