module github.com/mpq/mpq

go 1.26.0

require (
	github.com/pelletier/go-toml/v2 v2.4.3
	github.com/quic-go/quic-go v0.65.0
	golang.org/x/crypto v0.54.0
	golang.org/x/sys v0.47.0
)

require golang.org/x/net v0.56.0 // indirect
