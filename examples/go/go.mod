module github.com/pserver/pserver/examples/go

go 1.19

require (
	github.com/pserver/pserver/clients/go v0.0.0
	google.golang.org/protobuf v1.28.1
)

replace github.com/pserver/pserver/clients/go => ../../clients/go
