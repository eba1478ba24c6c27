# toolgate in a container: `toolgate serve` or `toolgate mcp` from the static musl build.
#
#   docker build -t toolgate --build-arg TOOLGATE_COMMIT=$(git rev-parse --short=12 HEAD) .   # scratch (default)
#   docker build -t toolgate:shell --target shell .  # with bash, coreutils and git
#   docker run --rm -i -v "$PWD:/work" toolgate mcp --dir /work
#   docker run --rm -p 7777:7777 -v "$PWD:/work" toolgate serve --dir /work --listen 0.0.0.0:7777 --allow-host localhost
#
# The build stage runs `cargo xtask dist` for this machine's musl target, the same recipe
# as the release archives. The sandbox needs Landlock, seccomp and user namespaces inside
# the container: see README "Running it in a container".

FROM rust:1-bookworm AS build
# `.git` stays out of the context: `--build-arg TOOLGATE_COMMIT=$(git rev-parse --short=12 HEAD)`
# names the commit in `toolgate --version`.
ARG TOOLGATE_COMMIT=unknown
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends musl-tools libseccomp-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN triple="$(uname -m)-unknown-linux-musl" \
 && rustup target add "$triple" \
 && cargo xtask dist --target "$triple" --no-packages \
 && mkdir -p /out/bin /out/tmp /out/work /out/data /out/etc \
 && tar -xzf target/archives/toolgate-*-"$triple".tar.gz -C /tmp \
 && cp /tmp/toolgate-*-"$triple"/toolgate /tmp/toolgate-*-"$triple"/toolgate-sandbox-exec /out/bin/ \
 && echo 'toolgate:x:10001:10001::/data:/sbin/nologin' > /out/etc/passwd \
 && echo 'toolgate:x:10001:' > /out/etc/group \
 && chown 10001:10001 /out/data /out/work && chmod 1777 /out/tmp

# With a shell: the bash tool has bash, coreutils and git to run.
FROM debian:bookworm-slim AS shell
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends bash coreutils git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --home-dir /data --create-home toolgate \
 && mkdir -p /work && chown toolgate /work
COPY --from=build /out/bin/ /usr/local/bin/
USER toolgate
ENV TOOLGATE_DATA_DIR=/data/share TOOLGATE_CONFIG_DIR=/data/config
WORKDIR /work
ENTRYPOINT ["/usr/local/bin/toolgate"]
CMD ["mcp", "--dir", "/work"]

# The default: nothing but the static binary, its trampoline, CA roots and a user. The
# file, web and MCP gateway tools work; bash has no shell to run here (use `shell`).
FROM scratch AS toolgate
COPY --from=build /out/ /
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
USER 10001:10001
ENV TOOLGATE_DATA_DIR=/data/share TOOLGATE_CONFIG_DIR=/data/config TMPDIR=/tmp HOME=/data SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
WORKDIR /work
ENTRYPOINT ["/bin/toolgate"]
CMD ["mcp", "--dir", "/work"]
