package pserver

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc/codes"
)

// Tensor is a whole tensor as the trainer sees it: its elements flattened row-major as raw
// little-endian bytes (the wire format, so any element type travels, FLOAT16 and BFLOAT16
// included), with an optional shape. Float32s, Float64s, … build one from a Go slice and read one
// back; WithShape gives it a shape. A gradient's shape travels with it and must be its tensor's.
type Tensor struct {
	Type  pb.ElementType
	Shape []uint64
	Data  []byte
}

// ElementSize is the bytes of one element of t, or 0 for ELEMENT_TYPE_UNSPECIFIED.
func ElementSize(t pb.ElementType) int {
	switch t {
	case pb.ElementType_ELEMENT_TYPE_INT32, pb.ElementType_ELEMENT_TYPE_UINT32, pb.ElementType_ELEMENT_TYPE_FLOAT32:
		return 4
	case pb.ElementType_ELEMENT_TYPE_INT64, pb.ElementType_ELEMENT_TYPE_UINT64, pb.ElementType_ELEMENT_TYPE_FLOAT64:
		return 8
	case pb.ElementType_ELEMENT_TYPE_FLOAT16, pb.ElementType_ELEMENT_TYPE_BFLOAT16:
		return 2
	}
	return 0
}

// WithShape is t with shape (the dimensions, outermost first; their product must be t.Len()).
func (t Tensor) WithShape(shape ...uint64) Tensor {
	t.Shape = shape
	return t
}

// Len is the number of elements.
func (t Tensor) Len() int {
	if size := ElementSize(t.Type); size > 0 {
		return len(t.Data) / size
	}
	return 0
}

// Float32s is a FLOAT32 tensor of values.
func Float32s(values []float32) Tensor {
	data := make([]byte, 4*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
	}
	return Tensor{Type: pb.ElementType_ELEMENT_TYPE_FLOAT32, Data: data}
}

// Float64s is a FLOAT64 tensor of values.
func Float64s(values []float64) Tensor {
	data := make([]byte, 8*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint64(data[8*i:], math.Float64bits(v))
	}
	return Tensor{Type: pb.ElementType_ELEMENT_TYPE_FLOAT64, Data: data}
}

// Int32s is an INT32 tensor of values.
func Int32s(values []int32) Tensor {
	data := make([]byte, 4*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint32(data[4*i:], uint32(v))
	}
	return Tensor{Type: pb.ElementType_ELEMENT_TYPE_INT32, Data: data}
}

// Uint32s is a UINT32 tensor of values.
func Uint32s(values []uint32) Tensor {
	data := make([]byte, 4*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint32(data[4*i:], v)
	}
	return Tensor{Type: pb.ElementType_ELEMENT_TYPE_UINT32, Data: data}
}

// Int64s is an INT64 tensor of values.
func Int64s(values []int64) Tensor {
	data := make([]byte, 8*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint64(data[8*i:], uint64(v))
	}
	return Tensor{Type: pb.ElementType_ELEMENT_TYPE_INT64, Data: data}
}

// Uint64s is a UINT64 tensor of values.
func Uint64s(values []uint64) Tensor {
	data := make([]byte, 8*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint64(data[8*i:], v)
	}
	return Tensor{Type: pb.ElementType_ELEMENT_TYPE_UINT64, Data: data}
}

// Float32s reads a FLOAT32 tensor's elements (a copy: the bytes may sit at any alignment).
func (t Tensor) Float32s() []float32 {
	t.must(pb.ElementType_ELEMENT_TYPE_FLOAT32)
	out := make([]float32, len(t.Data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return out
}

// Float64s reads a FLOAT64 tensor's elements.
func (t Tensor) Float64s() []float64 {
	t.must(pb.ElementType_ELEMENT_TYPE_FLOAT64)
	out := make([]float64, len(t.Data)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:]))
	}
	return out
}

// Int32s reads an INT32 tensor's elements.
func (t Tensor) Int32s() []int32 {
	t.must(pb.ElementType_ELEMENT_TYPE_INT32)
	out := make([]int32, len(t.Data)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return out
}

// Int64s reads an INT64 tensor's elements.
func (t Tensor) Int64s() []int64 {
	t.must(pb.ElementType_ELEMENT_TYPE_INT64)
	out := make([]int64, len(t.Data)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
	}
	return out
}

// must panics when t is not of type want: reading a tensor as the wrong type is a programming
// error, like a bad type assertion.
func (t Tensor) must(want pb.ElementType) {
	if t.Type != want {
		panic(fmt.Sprintf("pserver: tensor holds %s, not %s", t.Type, want))
	}
}

// spec is what the client must know of a declared tensor to place, split and reassemble it.
type spec struct {
	elementType pb.ElementType
	length      int
	shape       []uint64
}

// checkShape fails (CLIENT_SHAPE_MISMATCH) when a tensor's shape, if it has one, does not hold
// exactly its elements, or its bytes are not whole elements.
func checkShape(what, name string, t Tensor) error {
	size := ElementSize(t.Type)
	if size == 0 || len(t.Data)%size != 0 {
		return clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_SHAPE_MISMATCH, nil,
			"%s %s: %d bytes of %s are not whole elements", what, name, len(t.Data), t.Type)
	}
	if len(t.Shape) > 0 && product(t.Shape) != uint64(t.Len()) {
		return clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_SHAPE_MISMATCH, nil,
			"%s %s: shape %s holds %d elements, its data %d", what, name, shapeText(t.Shape), product(t.Shape), t.Len())
	}
	return nil
}

// checkGradient fails (CLIENT_SHAPE_MISMATCH, naming the tensor, the expected and the actual)
// when a gradient does not fit its tensor: another element type, another element count, or a
// shape other than the tensor's. A gradient without a shape is checked by its count only; a
// tensor without one (a flat vector) takes a 1-D shape of its length, as the pserver does.
func checkGradient(name string, g Tensor, sp spec) error {
	if g.Type != sp.elementType {
		return clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_SHAPE_MISMATCH, nil,
			"gradient %s: element type %s, the tensor's is %s", name, g.Type, sp.elementType)
	}
	if err := checkShape("gradient", name, g); err != nil {
		return err
	}
	if g.Len() != sp.length {
		return clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_SHAPE_MISMATCH, nil,
			"gradient %s: %d elements, the tensor has %d (shape %s)", name, g.Len(), sp.length, wholeShapeText(sp))
	}
	if len(g.Shape) == 0 {
		return nil
	}
	if (len(sp.shape) == 0 && len(g.Shape) == 1) || shapesEqual(g.Shape, sp.shape) {
		return nil // a 1-D shape of a flat vector's length is its shape
	}
	return clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_SHAPE_MISMATCH, nil,
		"gradient %s: shape %s, the tensor's shape is %s", name, shapeText(g.Shape), wholeShapeText(sp))
}

func product(shape []uint64) uint64 {
	n := uint64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

func shapesEqual(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func shapeText(shape []uint64) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.FormatUint(d, 10)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func wholeShapeText(sp spec) string {
	if len(sp.shape) == 0 {
		return fmt.Sprintf("a flat vector of %d", sp.length)
	}
	return shapeText(sp.shape)
}
