//go:build integration

package conformance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// repoRoot is /work/main seen from this package's directory (tests run in it).
const repoRoot = "../../.."

// cluster is a real local cluster (etcd, masters, pservers, spares) run by the local-cluster
// CLI, driven by JSON lines over its standard input and output. It stops the cluster when its
// standard input closes, which cleanup does (and which also happens if this process dies).
type cluster struct {
	t       *testing.T
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string
	Masters []string `json:"masters"`
	Serving map[string]struct {
		Name    string `json:"name"`
		Address string `json:"address"`
		Epoch   uint64 `json:"epoch"`
	} `json:"serving"`
}

// startCluster starts a cluster with the scenarios' settings and stops it when the test ends.
func startCluster(t *testing.T, s settings) *cluster {
	t.Helper()
	cli := filepath.Join(repoRoot, "dist/libs/local-cluster/cli.js")
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("%s is missing: run `npx nx run local-cluster:build-cli` (the integration target does): %v", cli, err)
	}
	logDir := filepath.Join(repoRoot, "tmp", "client-go-conformance", fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixMilli()))
	cmd := exec.Command("node", cli,
		"--pservers", fmt.Sprint(s.Pservers), "--spares", fmt.Sprint(s.Spares),
		"--masters", fmt.Sprint(s.Masters), "--block-size", fmt.Sprint(s.BlockSize),
		"--log-dir", logDir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		defer close(c.lines)
		scanner := bufio.NewScanner(stdout)
		scanner.Buffer(make([]byte, 1<<20), 1<<20)
		for scanner.Scan() {
			if line := scanner.Text(); strings.HasPrefix(line, "{") {
				c.lines <- line
			}
		}
	}()
	t.Cleanup(c.stop)
	ready := c.next(120 * time.Second)
	if err := json.Unmarshal([]byte(ready), c); err != nil || !strings.Contains(ready, `"ready"`) {
		t.Fatalf("local-cluster did not get ready: %q (%v)", ready, err)
	}
	return c
}

// next is the CLI's next JSON line.
func (c *cluster) next(timeout time.Duration) string {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatal("local-cluster exited")
		}
		return line
	case <-time.After(timeout):
		c.t.Fatalf("local-cluster: no answer within %s", timeout)
	}
	return ""
}

// command sends one command and returns the CLI's answer; an error event fails the test.
func (c *cluster) command(line string) map[string]interface{} {
	c.t.Helper()
	if _, err := fmt.Fprintln(c.stdin, line); err != nil {
		c.t.Fatalf("local-cluster: %v", err)
	}
	var reply map[string]interface{}
	if err := json.Unmarshal([]byte(c.next(60*time.Second)), &reply); err != nil {
		c.t.Fatal(err)
	}
	if reply["event"] == "error" {
		c.t.Fatalf("local-cluster %q: %v", line, reply["message"])
	}
	return reply
}

// stop closes the CLI's standard input (it stops the cluster and exits) and waits for it.
func (c *cluster) stop() {
	_ = c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			c.t.Errorf("local-cluster exited: %v", err)
		}
	case <-time.After(60 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
		c.t.Error("local-cluster did not stop within 60 s of its stdin closing; killed it")
	}
}
