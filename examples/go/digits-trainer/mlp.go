package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pserver/pserver/clients/go/pserver"
)

// The model of apps/demo/src/model/mlp.ts: 784 pixels → a hidden layer of ReLU units → 10
// classes by softmax, trained on the mean cross-entropy of a batch.
const (
	inputs  = 784
	classes = 10
)

var paramNames = []string{"w1", "b1", "w2", "b2"}

// mlp holds the parameters (or their gradients): w1 is inputs × hidden, row-major (row = one
// input pixel); w2 is hidden × classes.
type mlp struct {
	w1, b1, w2, b2 []float32
}

func (m mlp) tensors() map[string]pserver.Tensor {
	return map[string]pserver.Tensor{
		"w1": pserver.Float32s(m.w1), "b1": pserver.Float32s(m.b1),
		"w2": pserver.Float32s(m.w2), "b2": pserver.Float32s(m.b2),
	}
}

func fromTensors(t map[string]pserver.Tensor) mlp {
	return mlp{w1: t["w1"].Float32s(), b1: t["b1"].Float32s(), w2: t["w2"].Float32s(), b2: t["b2"].Float32s()}
}

// sample is one labelled image, pixels scaled to [0, 1].
type sample struct {
	pixels []float32
	label  int
}

// fromCSVLine parses "label,p1,…,p784" with pixels 0-255.
func fromCSVLine(line string) (sample, error) {
	fields := strings.Split(line, ",")
	if len(fields) != inputs+1 {
		return sample{}, fmt.Errorf("a digit line has %d fields, this one %d", inputs+1, len(fields))
	}
	label, err := strconv.Atoi(fields[0])
	if err != nil || label < 0 || label > 9 {
		return sample{}, fmt.Errorf("a digit's label is 0-9, not '%s'", fields[0])
	}
	pixels := make([]float32, inputs)
	for i := range pixels {
		v, err := strconv.ParseFloat(fields[i+1], 64)
		if err != nil {
			return sample{}, fmt.Errorf("pixel %d: %v", i, err)
		}
		pixels[i] = float32(v / 255)
	}
	return sample{pixels: pixels, label: label}, nil
}

// initialParams are He-initialized weights and zero biases from the same seeded generator as the
// TypeScript trainer (mulberry32, Box–Muller), so every trainer proposes the same ones.
func initialParams(hidden int, seed uint32) mlp {
	uniform := mulberry32(seed)
	normal := func() float64 {
		return math.Sqrt(-2*math.Log(1-uniform())) * math.Cos(2*math.Pi*uniform())
	}
	scaled := func(n int, std float64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(normal() * std)
		}
		return out
	}
	return mlp{
		w1: scaled(inputs*hidden, math.Sqrt(2.0/inputs)),
		b1: make([]float32, hidden),
		w2: scaled(hidden*classes, math.Sqrt(1/float64(hidden))),
		b2: make([]float32, classes),
	}
}

// mulberry32 is apps/demo/src/model/random.ts's seededRandom: uniform numbers in [0, 1).
func mulberry32(seed uint32) func() float64 {
	state := seed
	return func() float64 {
		state += 0x6d2b79f5
		t := state
		t = (t ^ (t >> 15)) * (t | 1)
		t ^= t + (t^(t>>7))*(t|61)
		return float64(t^(t>>14)) / 4294967296
	}
}

// forward computes the hidden activations and class probabilities of one image.
func forward(p mlp, pixels []float32, hidden, probabilities []float64) {
	units := len(p.b1)
	for h := 0; h < units; h++ {
		hidden[h] = float64(p.b1[h])
	}
	for i, x := range pixels {
		if x == 0 {
			continue // most pixels are blank
		}
		row := p.w1[i*units : (i+1)*units]
		for h, w := range row {
			hidden[h] += float64(x) * float64(w)
		}
	}
	for h := range hidden {
		if hidden[h] < 0 {
			hidden[h] = 0
		}
	}
	max := math.Inf(-1)
	for c := 0; c < classes; c++ {
		z := float64(p.b2[c])
		for h := 0; h < units; h++ {
			z += hidden[h] * float64(p.w2[h*classes+c])
		}
		probabilities[c] = z
		if z > max {
			max = z
		}
	}
	sum := 0.0
	for c := range probabilities {
		probabilities[c] = math.Exp(probabilities[c] - max)
		sum += probabilities[c]
	}
	for c := range probabilities {
		probabilities[c] /= sum
	}
}

// gradients is the mean cross-entropy of a batch and its gradient with respect to every parameter.
func gradients(p mlp, batch []sample) (float64, mlp) {
	units := len(p.b1)
	g := mlp{
		w1: make([]float32, len(p.w1)), b1: make([]float32, units),
		w2: make([]float32, len(p.w2)), b2: make([]float32, classes),
	}
	hidden := make([]float64, units)
	probabilities := make([]float64, classes)
	dHidden := make([]float64, units)
	scale := 1 / float64(len(batch))
	loss := 0.0
	for _, s := range batch {
		forward(p, s.pixels, hidden, probabilities)
		loss -= math.Log(math.Max(probabilities[s.label], 1e-12))
		probabilities[s.label] -= 1 // d loss / d logit = p − onehot(label)
		for h := range dHidden {
			dHidden[h] = 0
		}
		for c := 0; c < classes; c++ {
			dz := probabilities[c] * scale
			g.b2[c] += float32(dz)
			for h := 0; h < units; h++ {
				g.w2[h*classes+c] += float32(hidden[h] * dz)
				dHidden[h] += float64(p.w2[h*classes+c]) * dz
			}
		}
		for h := 0; h < units; h++ {
			if hidden[h] == 0 {
				dHidden[h] = 0 // ReLU
			}
			g.b1[h] += float32(dHidden[h])
		}
		for i, x := range s.pixels {
			if x == 0 {
				continue
			}
			row := g.w1[i*units : (i+1)*units]
			for h := range row {
				row[h] += float32(float64(x) * dHidden[h])
			}
		}
	}
	return loss * scale, g
}
