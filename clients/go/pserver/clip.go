package pserver

import (
	"encoding/binary"
	"math"
	"sort"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc/codes"
)

// Global-norm clipping of a step's dense gradients (Options.GlobalClipNorm): the rule of
// proto/README.md ("Global-norm clipping"), which the TypeScript and Python clients follow bit
// for bit and proto/testdata/clipping.json pins. Only FLOAT32 and FLOAT64 gradients count and
// are scaled. The squares are added one at a time in a float64, tensors in name order (bytes,
// that is code points) and elements in index order, so the sum's rounding depends on nothing a
// client may do differently (a map's order, a pairwise sum).

// globalNorm is the L2 norm of the FLOAT32 and FLOAT64 gradients together, by the rule above.
func globalNorm(grads map[string]Tensor) float64 {
	names := make([]string, 0, len(grads))
	for name := range grads {
		names = append(names, name)
	}
	sort.Strings(names)
	var sum float64
	for _, name := range names {
		g := grads[name]
		if !isClipped(g.Type) {
			continue
		}
		for i, n := 0, g.Len(); i < n; i++ {
			x := element(g, i)
			// The conversion rounds the product on its own: Go may otherwise fuse the multiply
			// and the add into one FMA (arm64, ppc64, s390x), and the other clients cannot.
			sum += float64(x * x)
		}
	}
	return math.Sqrt(sum)
}

// clipByGlobalNorm is grads scaled by maxNorm / norm when their global norm is above maxNorm (a
// NaN norm is not), each product a float64 rounded to its element type; else grads as given.
// Scaled gradients are copies: the caller's bytes are left as they were.
func clipByGlobalNorm(grads map[string]Tensor, maxNorm float64) map[string]Tensor {
	norm := globalNorm(grads)
	if !(norm > maxNorm) {
		return grads
	}
	scale := maxNorm / norm
	out := make(map[string]Tensor, len(grads))
	for name, g := range grads {
		if !isClipped(g.Type) {
			out[name] = g
			continue
		}
		scaled := Tensor{Type: g.Type, Shape: g.Shape, Data: make([]byte, len(g.Data))}
		size := ElementSize(g.Type)
		for i, n := 0, g.Len(); i < n; i++ {
			y := element(g, i) * scale
			if g.Type == pb.ElementType_ELEMENT_TYPE_FLOAT32 {
				binary.LittleEndian.PutUint32(scaled.Data[i*size:], math.Float32bits(float32(y)))
			} else {
				binary.LittleEndian.PutUint64(scaled.Data[i*size:], math.Float64bits(y))
			}
		}
		out[name] = scaled
	}
	return out
}

// checkGlobalClipNorm refuses a bound that is negative, NaN or infinite (0: no clipping).
func checkGlobalClipNorm(bound float64) error {
	if bound < 0 || math.IsNaN(bound) || math.IsInf(bound, 0) {
		return clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_INVALID_OPTIONS, nil, "GlobalClipNorm: must be a finite number > 0 (0: no clipping), got %v", bound)
	}
	return nil
}

func isClipped(t pb.ElementType) bool {
	return t == pb.ElementType_ELEMENT_TYPE_FLOAT32 || t == pb.ElementType_ELEMENT_TYPE_FLOAT64
}

// element is element i of a FLOAT32 or FLOAT64 tensor, as a float64 (exact).
func element(t Tensor, i int) float64 {
	if t.Type == pb.ElementType_ELEMENT_TYPE_FLOAT32 {
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:])))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:]))
}
