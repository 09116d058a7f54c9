package pserver

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
)

// placementVectors is proto/testdata/placement.json: every client checks itself against it.
type placementVectors struct {
	FNV []struct {
		Input string `json:"input"`
		Hash  string `json:"hash"`
	} `json:"fnv1a64"`
	Jump []struct {
		Key     string `json:"key"`
		Buckets int    `json:"buckets"`
		Bucket  int    `json:"bucket"`
	} `json:"jump"`
	Placement []struct {
		Name      string  `json:"name"`
		Elements  int     `json:"elements"`
		BlockSize int     `json:"block_size"`
		Shards    int     `json:"shards"`
		Blocks    []Block `json:"blocks"`
	} `json:"placement"`
}

// loadPlacementVectors reads the contract's placement vectors (shared with the conformance runner).
func loadPlacementVectors(t *testing.T) placementVectors {
	t.Helper()
	raw, err := os.ReadFile("../../../proto/testdata/placement.json")
	if err != nil {
		t.Fatal(err)
	}
	var v placementVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.FNV) == 0 || len(v.Jump) == 0 || len(v.Placement) == 0 {
		t.Fatal("placement.json: a section is empty")
	}
	return v
}

func TestFNV1a64Vectors(t *testing.T) {
	for _, c := range loadPlacementVectors(t).FNV {
		if got := strconv.FormatUint(FNV1a64([]byte(c.Input)), 16); leftPad(got) != c.Hash {
			t.Errorf("FNV1a64(%q) = %s, want %s", c.Input, leftPad(got), c.Hash)
		}
	}
}

func TestJumpHashVectors(t *testing.T) {
	for _, c := range loadPlacementVectors(t).Jump {
		key, err := strconv.ParseUint(c.Key, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := JumpHash(key, c.Buckets); got != c.Bucket {
			t.Errorf("JumpHash(%s, %d) = %d, want %d", c.Key, c.Buckets, got, c.Bucket)
		}
	}
}

func TestPlaceTensorVectors(t *testing.T) {
	for _, c := range loadPlacementVectors(t).Placement {
		got := PlaceTensor(c.Name, c.Elements, c.BlockSize, c.Shards)
		if len(got) != len(c.Blocks) {
			t.Errorf("PlaceTensor(%q, %d, %d, %d): %d blocks, want %d", c.Name, c.Elements, c.BlockSize, c.Shards, len(got), len(c.Blocks))
			continue
		}
		for i, want := range c.Blocks {
			if got[i] != want {
				t.Errorf("PlaceTensor(%q, %d, %d, %d) block %d = %+v, want %+v", c.Name, c.Elements, c.BlockSize, c.Shards, i, got[i], want)
			}
		}
	}
}

func leftPad(hex string) string {
	for len(hex) < 16 {
		hex = "0" + hex
	}
	return hex
}

// tablePlacementVectors is proto/testdata/table_placement.json.
type tablePlacementVectors struct {
	MaxBuckets uint32 `json:"max_buckets"`
	Fmix32     []struct {
		Input  uint32 `json:"input"`
		Output uint32 `json:"output"`
	} `json:"fmix32"`
	IDs []struct {
		ID      string `json:"id"`
		Lo      uint32 `json:"lo"`
		Hi      uint32 `json:"hi"`
		Buckets []struct {
			Buckets uint32 `json:"buckets"`
			Bucket  uint32 `json:"bucket"`
		} `json:"buckets"`
	} `json:"ids"`
	Tables []struct {
		Name         string   `json:"name"`
		Buckets      uint32   `json:"buckets"`
		Shards       int      `json:"shards"`
		BucketShards []uint32 `json:"bucket_shards"`
	} `json:"tables"`
	IDShards []struct {
		Name     string   `json:"name"`
		Buckets  uint32   `json:"buckets"`
		Shards   int      `json:"shards"`
		IDs      []string `json:"ids"`
		IDShards []int    `json:"id_shards"`
	} `json:"id_shards"`
}

func loadTablePlacementVectors(t *testing.T) tablePlacementVectors {
	t.Helper()
	raw, err := os.ReadFile("../../../proto/testdata/table_placement.json")
	if err != nil {
		t.Fatal(err)
	}
	var v tablePlacementVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Fmix32) == 0 || len(v.IDs) == 0 || len(v.Tables) == 0 || len(v.IDShards) == 0 {
		t.Fatal("table_placement.json: a section is empty")
	}
	return v
}

func parseID(t *testing.T, s string) int64 {
	t.Helper()
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestTablePlacementBucketVectors(t *testing.T) {
	v := loadTablePlacementVectors(t)
	if v.MaxBuckets != MaxTableBuckets {
		t.Errorf("max_buckets = %d, MaxTableBuckets = %d", v.MaxBuckets, MaxTableBuckets)
	}
	if got := fmix32(1); got != 0x514e28b7 {
		t.Errorf("fmix32(1) = %#x, want MurmurHash3's 0x514e28b7", got)
	}
	for _, c := range v.Fmix32 {
		if got := fmix32(c.Input); got != c.Output {
			t.Errorf("fmix32(%d) = %d, want %d", c.Input, got, c.Output)
		}
	}
	ids := make([]int64, len(v.IDs))
	for i, c := range v.IDs {
		ids[i] = parseID(t, c.ID)
		if lo, hi := uint32(uint64(ids[i])), uint32(uint64(ids[i])>>32); lo != c.Lo || hi != c.Hi {
			t.Errorf("id %s: halves %d, %d, want %d, %d", c.ID, lo, hi, c.Lo, c.Hi)
		}
		for _, b := range c.Buckets {
			if got := BucketOfID(ids[i], b.Buckets); got != b.Bucket {
				t.Errorf("BucketOfID(%s, %d) = %d, want %d", c.ID, b.Buckets, got, b.Bucket)
			}
		}
	}
	for j, b := range v.IDs[0].Buckets {
		got := BucketsOfIDs(ids, b.Buckets)
		for i, c := range v.IDs {
			if got[i] != c.Buckets[j].Bucket {
				t.Errorf("BucketsOfIDs(..., %d)[%d] (id %s) = %d, want %d", b.Buckets, i, c.ID, got[i], c.Buckets[j].Bucket)
			}
		}
	}
}

func TestTablePlacementShardVectors(t *testing.T) {
	v := loadTablePlacementVectors(t)
	for _, c := range v.Tables {
		got := TableShards(c.Name, c.Buckets, c.Shards)
		if fmt.Sprint(got) != fmt.Sprint(c.BucketShards) {
			t.Errorf("TableShards(%q, %d, %d) = %v, want %v", c.Name, c.Buckets, c.Shards, got, c.BucketShards)
		}
	}
	for _, c := range v.IDShards {
		for i, s := range c.IDs {
			bucket := BucketOfID(parseID(t, s), c.Buckets)
			if got := TableShardOf(c.Name, bucket, c.Shards); got != c.IDShards[i] {
				t.Errorf("table %q B=%d N=%d: id %s is on shard %d, want %d", c.Name, c.Buckets, c.Shards, s, got, c.IDShards[i])
			}
		}
	}
}

func TestTablePlacementBucketBIsTheBlockTableAtB(t *testing.T) {
	shards := TableShards("emb", 4096, 7)
	if len(shards) != 4096 {
		t.Fatalf("%d entries, want 4096", len(shards))
	}
	for _, b := range []uint32{0, 9, 10, 99, 100, 999, 1000, 4095} {
		if want := ShardOf(fmt.Sprintf("emb@%d", b), 7); int(shards[b]) != want {
			t.Errorf("bucket %d on shard %d, want %d", b, shards[b], want)
		}
	}
}

func TestTablePlacementRejectsBadBucketCounts(t *testing.T) {
	for _, buckets := range []uint32{0, 3, 1000, 1 << 25} {
		for name, call := range map[string]func(){
			"BucketOfID":   func() { BucketOfID(1, buckets) },
			"BucketsOfIDs": func() { BucketsOfIDs([]int64{1}, buckets) },
			"TableShards":  func() { TableShards("emb", buckets, 2) },
		} {
			func() {
				defer func() {
					want := fmt.Sprintf("%s: buckets must be a power of two in [1, 2^24], got %d", name, buckets)
					if r := recover(); r != want {
						t.Errorf("%s with %d buckets: panic %v, want %q", name, buckets, r, want)
					}
				}()
				call()
			}()
		}
	}
}
