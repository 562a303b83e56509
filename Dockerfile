# syntax=docker/dockerfile:1
# The controller image, for machines with Docker or BuildKit:
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=v0.1.0 --build-arg REVISION=$(git rev-parse HEAD) \
#     -t ghcr.io/shardgate/shardgate:v0.1.0 .
# `make image` builds the same image without a container runtime
# (internal/image): a static binary, run as uid 65532, the same entrypoint
# and labels.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
ARG REVISION=""
WORKDIR /src
ENV GOTOOLCHAIN=local CGO_ENABLED=0
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X github.com/shardgate/shardgate/internal/version.Version=${VERSION} -X github.com/shardgate/shardgate/internal/version.Commit=${REVISION}" \
      -o /out/shardgate ./cmd/shardgate

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=""
LABEL org.opencontainers.image.title="shardgate" \
      org.opencontainers.image.description="Gateway API ingress controller for multi-tenant compute providers" \
      org.opencontainers.image.source="https://github.com/shardgate/shardgate" \
      org.opencontainers.image.url="https://github.com/shardgate/shardgate" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/shardgate /shardgate
USER 65532:65532
EXPOSE 8080 8081 18000 8086
ENTRYPOINT ["/shardgate"]
CMD ["controller"]
