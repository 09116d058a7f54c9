//go:build integration

package conformance

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startPserver starts a standalone pserver (dist/apps/pserver/main.js, which the integration
// target builds) on a free port with args, writing its output to logPath, and returns its port.
// It runs with --exit-on-stdin-close: cleanup closes its stdin and waits, killing it by PID if
// it has not exited, and it exits too if this process dies.
func startPserver(t *testing.T, logPath string, args ...string) string {
	t.Helper()
	main := filepath.Join(repoRoot, "dist", "apps", "pserver", "main.js")
	if _, err := os.Stat(main); err != nil {
		t.Fatalf("%s is missing: run `npx nx build pserver` (the integration target does): %v", main, err)
	}
	cmd := exec.Command("node", append([]string{main, "--port", "0", "--log-format", "json", "--exit-on-stdin-close"}, args...)...)
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(listening)
		scanner := bufio.NewScanner(io.TeeReader(stdout, log))
		scanner.Buffer(make([]byte, 1<<20), 1<<20)
		for scanner.Scan() {
			var entry struct {
				Msg     string `json:"msg"`
				Address string `json:"address"`
			}
			if json.Unmarshal(scanner.Bytes(), &entry) == nil && entry.Msg == "listening" {
				select {
				case listening <- entry.Address:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan error, 1)
		go func() { <-read; done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the pserver exited: %v (log: %s)", err, log.Name())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("the pserver did not stop within 30 s of its stdin closing; killed it")
		}
		_ = log.Close()
	})
	select {
	case address, ok := <-listening:
		if !ok {
			t.Fatalf("the pserver exited before listening; see %s", log.Name())
		}
		return address[strings.LastIndex(address, ":")+1:]
	case <-time.After(60 * time.Second):
		t.Fatalf("the pserver did not listen within 60 s; see %s", log.Name())
	}
	return ""
}
