//go:build integration

package conformance

import (
	"context"
	"encoding/hex"
	"reflect"
	"testing"
	"time"

	"github.com/pserver/pserver/clients/go/pserver"
	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// testContext ends with the test, and after two minutes at most.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// connect connects a trainer through the cluster's masters and closes it when the test ends.
func connect(t *testing.T, ctx context.Context, c *cluster, name string) *pserver.Client {
	t.Helper()
	client, err := pserver.Connect(ctx, pserver.Options{Master: c.Masters, Name: name})
	if err != nil {
		t.Fatalf("connect %s: %v", name, err)
	}
	t.Cleanup(client.Close)
	return client
}

// dial opens a raw gRPC connection, closed when the test ends.
func dial(t *testing.T, address string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.Dial(address, grpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func elementType(t *testing.T, name string) pb.ElementType {
	t.Helper()
	v, ok := pb.ElementType_value[name]
	if !ok {
		t.Fatalf("unknown element type %q", name)
	}
	return pb.ElementType(v)
}

// sgdAtRate1 is plain SGD that subtracts gradients as sent, for scenarios that name no optimizer:
// plain SGD has no default learning rate.
var sgdAtRate1 = &pb.OptimizerConfig{Algorithm: &pb.OptimizerConfig_Sgd{Sgd: &pb.Sgd{}}, LearningRate: &pb.LearningRate{Base: proto.Float64(1)}}

// raw is a scenario's raw tensor in its proto form.
func raw(t *testing.T, r *rawTensor) *pb.Tensor {
	t.Helper()
	return &pb.Tensor{Name: r.Name, ElementType: elementType(t, r.ElementType), Shape: r.Shape, Content: unhex(t, r.ContentHex)}
}

// optimizer turns the scenarios' optimizer (proto3 JSON names) into its proto form.
func optimizer(o optimizerSpec) *pb.OptimizerConfig {
	config := &pb.OptimizerConfig{}
	if o.Sgd != nil {
		config.Algorithm = &pb.OptimizerConfig_Sgd{Sgd: &pb.Sgd{}}
	}
	if o.Adam != nil {
		config.Algorithm = &pb.OptimizerConfig_Adam{Adam: &pb.Adam{}}
	}
	if o.LearningRate != nil {
		config.LearningRate = &pb.LearningRate{Base: proto.Float64(o.LearningRate.Base)}
	}
	return config
}

// sentinelOf is the client's sentinel error of an ErrorCode named in the scenarios.
func sentinelOf(t *testing.T, name string) error {
	t.Helper()
	v, ok := pb.ErrorCode_value[name]
	if !ok || v == 0 {
		t.Fatalf("unknown error code %q", name)
	}
	return pserver.Sentinel(pb.ErrorCode(v))
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readFloat32s reads one FLOAT32 tensor through the client.
func readFloat32s(t *testing.T, ctx context.Context, client *pserver.Client, name string) []float32 {
	t.Helper()
	params, err := client.GetParams(ctx, name)
	if err != nil {
		t.Fatalf("GetParams %s: %v", name, err)
	}
	return params[name].Float32s()
}

func expectFloat32s(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// pushOnce runs one step that pushes grad to name.
func pushOnce(t *testing.T, ctx context.Context, client *pserver.Client, name string, grad []float32) {
	t.Helper()
	err := client.Step(ctx, func(s *pserver.StepContext) error {
		_, err := s.SendGrads(map[string]pserver.Tensor{name: pserver.Float32s(grad)})
		return err
	})
	if err != nil {
		t.Fatalf("push to %s: %v", name, err)
	}
}
