package pserver

import (
	"encoding/json"
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
