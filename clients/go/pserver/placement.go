package pserver

import (
	"fmt"
	"strconv"
)

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
	return fnv1a64From(0xcbf29ce484222325, b)
}

// fnv1a64From continues h, the FNV-1a hash of a prefix, over b.
func fnv1a64From(h uint64, b []byte) uint64 {
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

// MaxTableBuckets is the most buckets a sparse table may have: a client holds one bucket → shard
// entry per bucket.
const MaxTableBuckets = 1 << 24

// fmix32 is MurmurHash3's 32-bit finalizer.
func fmix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

func checkTableBuckets(caller string, buckets uint32) {
	if buckets < 1 || buckets > MaxTableBuckets || buckets&(buckets-1) != 0 {
		panic(fmt.Sprintf("%s: buckets must be a power of two in [1, 2^24], got %d", caller, buckets))
	}
}

// BucketOfID is the bucket of id among buckets (a power of two, at most MaxTableBuckets) in a
// sparse table: fmix32(lo ^ fmix32(hi)) & (buckets - 1), lo and hi the low and high 32 bits of
// the id's two's complement (proto/README.md, "Placement", "Tables"). It panics on a bad count.
func BucketOfID(id int64, buckets uint32) uint32 {
	checkTableBuckets("BucketOfID", buckets)
	return bucketOfID(uint64(id), buckets-1)
}

func bucketOfID(bits uint64, mask uint32) uint32 {
	return fmix32(uint32(bits)^fmix32(uint32(bits>>32))) & mask
}

// BucketsOfIDs is BucketOfID of each of ids.
func BucketsOfIDs(ids []int64, buckets uint32) []uint32 {
	checkTableBuckets("BucketsOfIDs", buckets)
	out := make([]uint32, len(ids))
	for i, id := range ids {
		out[i] = bucketOfID(uint64(id), buckets-1)
	}
	return out
}

// TableShardOf is the shard of bucket b of table among shardCount: that of the block `table@b`,
// as if the table were a tensor of its buckets.
func TableShardOf(table string, bucket uint32, shardCount int) int {
	return ShardOf(table+"@"+strconv.FormatUint(uint64(bucket), 10), shardCount)
}

// TableShards is the shard of every bucket of table among shardCount, indexed by bucket: what a
// client computes once per cluster view. It panics on a bad bucket count.
func TableShards(name string, buckets uint32, shardCount int) []uint32 {
	checkTableBuckets("TableShards", buckets)
	if shardCount < 1 {
		panic(fmt.Sprintf("TableShards(%q, %d, %d): shardCount must be positive", name, buckets, shardCount))
	}
	// FNV-1a runs byte by byte: the bytes of `name@` are hashed once, then each bucket's digits.
	prefix := FNV1a64([]byte(name + "@"))
	shards := make([]uint32, buckets)
	digits := make([]byte, 0, 8)
	for b := uint32(0); b < buckets; b++ {
		key := fnv1a64From(prefix, strconv.AppendUint(digits[:0], uint64(b), 10))
		shards[b] = uint32(JumpHash(key, shardCount))
	}
	return shards
}
