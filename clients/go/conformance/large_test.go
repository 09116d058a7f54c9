//go:build integration

package conformance

import (
	"bytes"
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/pserver/pserver/clients/go/pserver"
	pb "github.com/pserver/pserver/clients/go/pserverpb"
)

// TestAShardOfAnySizeIsPulledAndPushed puts a 300 MiB tensor on one standalone pserver (75
// blocks of the default 4 MiB, all on its one shard): far over the client's 64 MiB message
// limit and the pserver's 128 MiB. The pull is split into calls that fit; the push of a
// gradient as large is streamed. Every byte is checked.
func TestAShardOfAnySizeIsPulledAndPushed(t *testing.T) {
	dir := t.TempDir()
	port := startPserver(t, filepath.Join(dir, "pserver.log"), "--checkpoint-dir", filepath.Join(dir, "checkpoints"))
	ctx := testContext(t)
	client, err := pserver.Connect(ctx, pserver.Options{Pservers: []string{"127.0.0.1:" + port}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	const elements = 300 << 20 / 4
	value := func(i int) float32 { return float32(i % 4096) }
	data := make([]byte, 4*elements)
	for i := 0; i < elements; i++ {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(value(i)))
	}
	big := pserver.Tensor{Type: pb.ElementType_ELEMENT_TYPE_FLOAT32, Data: data}
	started := time.Now()
	if err := client.InitParams(ctx, map[string]pserver.Tensor{"big": big}, sgdAtRate1); err != nil {
		t.Fatal(err)
	}
	t.Logf("InitParams of 300 MiB: %s", time.Since(started))

	started = time.Now()
	params, err := client.GetParams(ctx, "big")
	if err != nil {
		t.Fatalf("GetParams of 300 MiB: %v", err)
	}
	t.Logf("GetParams of 300 MiB: %s", time.Since(started))
	if !bytes.Equal(params["big"].Data, data) {
		t.Fatal("the 300 MiB tensor read back differs from what was written")
	}
	params = nil

	ones := make([]float32, elements)
	for i := range ones {
		ones[i] = 1
	}
	started = time.Now()
	pushOnce(t, ctx, client, "big", ones)
	t.Logf("SendGrads of 300 MiB: %s", time.Since(started))
	got, err := client.GetParams(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	after := got["big"].Float32s()
	for i, v := range after {
		if v != value(i)-1 {
			t.Fatalf("big[%d] = %v after a push of ones, want %v", i, v, value(i)-1)
		}
	}
}
