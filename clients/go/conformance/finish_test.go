//go:build integration

package conformance

import (
	"testing"
	"time"
)

// TestFinishJob: trainers ask the job to finish one after the other; only the last is answered
// finished, and then every pserver leaves.
func TestFinishJob(t *testing.T) {
	s := loadScenarios(t)
	sc := s.FinishJob
	c := startCluster(t, s.Cluster)
	ctx := testContext(t)
	for k, name := range sc.Trainers {
		client := connect(t, ctx, c, name)
		finished, err := client.FinishJob(ctx, sc.Quorum)
		if err != nil {
			t.Fatalf("%s: FinishJob: %v", name, err)
		}
		if last := k == len(sc.Trainers)-1; finished != last {
			t.Fatalf("%s: FinishJob answered finished = %v, want %v", name, finished, last)
		}
		client.Close()
	}
	deadline := time.Now().Add(time.Duration(sc.LeaveWithinMs) * time.Millisecond)
	for len(c.command("serving")["serving"].(map[string]interface{})) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the pservers of the finished job did not leave")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
