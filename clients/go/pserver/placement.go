package pserver

import "fmt"

// DefaultBlockSize is the job's block size in elements when nothing else says (standalone mode).
const DefaultBlockSize = 1048576

// Block is one block of a tensor: its name, the elements [Start, End) of the flattened tensor,
// and its shard.
type Block struct {
	Name  string `json:"name"`
	Start int    `json:"start"`
	End   int    `json:"end"`
	Shard int    `json:"shard"`
}

// FNV1a64 is the 64-bit FNV-1a hash of b.
func FNV1a64(b []byte) uint64 {
	h := uint64(0xcbf29ce484222325)
	for _, c := range b {
		h ^= uint64(c)
		h *= 0x100000001b3
	}
	return h
}

// JumpHash is Lamping and Veach's jump consistent hash: a bucket in [0, buckets) for key. Its
// division is an IEEE double, as in the paper, so every language gets the same bucket.
func JumpHash(key uint64, buckets int) int {
	b, j := int64(-1), int64(0)
	for j < int64(buckets) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// ShardOf is the shard of a block (or of a tensor stored whole) among shards.
func ShardOf(blockName string, shards int) int {
	return JumpHash(FNV1a64([]byte(blockName)), shards)
}

// PlaceTensor splits a tensor of n elements into its blocks and places each: a tensor of at most
// blockSize elements is one block named as the tensor, a larger one is split into `<name>@<k>`.
func PlaceTensor(name string, n, blockSize, shards int) []Block {
	if blockSize < 1 || shards < 1 || n < 0 {
		panic(fmt.Sprintf("PlaceTensor(%q, %d, %d, %d): bad arguments", name, n, blockSize, shards))
	}
	if n <= blockSize {
		return []Block{{Name: name, Start: 0, End: n, Shard: ShardOf(name, shards)}}
	}
	var blocks []Block
	for k, start := 0, 0; start < n; k, start = k+1, start+blockSize {
		blockName := fmt.Sprintf("%s@%d", name, k)
		end := start + blockSize
		if end > n {
			end = n
		}
		blocks = append(blocks, Block{Name: blockName, Start: start, End: end, Shard: ShardOf(blockName, shards)})
	}
	return blocks
}
