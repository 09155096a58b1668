package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeDeploy runs the Makefile's deploy target with stand-ins for cdk,
// docker, aws and vwr that record how they are called (no AWS account is
// reachable from the tests): the registry first, the image built for arm64
// and pushed under the tag, every stack deployed with that tag, then the
// edge keys synced from the stack outputs; --require-approval never only
// when CI is set; and without Docker, a stop that says how to go on. The
// Go builds it depends on are taken as made (-o): they have their own tests.
func TestMakeDeploy(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fakes := t.TempDir()
	log := filepath.Join(fakes, "calls.log")
	outputs := filepath.Join(root, "infra", "cdk-outputs.json")
	t.Cleanup(func() { os.Remove(outputs) })
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(fakes, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// cdk writes the outputs file its --outputs-file names, under infra/ as
	// `cd infra && cdk …` would.
	write("cdk", `echo "cdk $*" >> `+log+`
cat > `+outputs+` <<'JSON'
{"VwrRegistry":{"QueueRepositoryUri":"123456789012.dkr.ecr.eu-west-1.amazonaws.com/vwr-queue"},
 "VwrTier1":{"Tier1KeysSecretArn":"arn:aws:secretsmanager:eu-west-1:123456789012:secret:Tier1Keys-AbC"},
 "VwrFrontDoor":{"EdgeKeysArn":"arn:aws:cloudfront::123456789012:key-value-store/0f0e","DistributionDomain":"d111.cloudfront.net"}}
JSON
`)
	write("docker", `echo "docker $*" >> `+log+`
[ "$1" = login ] && cat >/dev/null
exit 0
`)
	write("aws", `echo "aws $*" >> `+log+`
case "$2" in get-login-password) echo secret-token;; describe-images) exit 1;; esac
`)
	write("vwr", `echo "vwr $*" >> `+log+"\n")
	noDocker := t.TempDir()
	for _, f := range []string{"cdk", "aws", "vwr"} {
		if err := os.Symlink(filepath.Join(fakes, f), filepath.Join(noDocker, f)); err != nil {
			t.Fatal(err)
		}
	}
	run := func(path string, ci bool, extra ...string) (string, string, error) {
		t.Helper()
		os.Remove(log)
		args := append([]string{"-C", root, "--no-print-directory", "-o", "lambdas", "-o", "build", "deploy", "QUEUE_IMAGE_TAG=abc123", "CDK=" + filepath.Join(fakes, "cdk"), "VWR=" + filepath.Join(fakes, "vwr")}, extra...)
		cmd := exec.Command("make", args...)
		env := []string{"PATH=" + path + ":" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "GOFLAGS=-mod=readonly"}
		for _, k := range []string{"GOCACHE", "GOPATH", "GOMODCACHE"} {
			if v := os.Getenv(k); v != "" {
				env = append(env, k+"="+v)
			}
		}
		if ci {
			env = append(env, "CI=true")
		}
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		calls, _ := os.ReadFile(log)
		return string(calls), string(out), err
	}
	repo := "123456789012.dkr.ecr.eu-west-1.amazonaws.com/vwr-queue"

	calls, out, err := run(fakes, false)
	if err != nil {
		t.Fatalf("make deploy: %v\n%s", err, out)
	}
	want := []string{
		"cdk deploy VwrRegistry --outputs-file cdk-outputs.json",
		"docker info",
		"aws ecr get-login-password --region eu-west-1",
		"docker login --username AWS --password-stdin 123456789012.dkr.ecr.eu-west-1.amazonaws.com",
		"aws ecr describe-images --region eu-west-1 --repository-name vwr-queue --image-ids imageTag=abc123",
		"docker build --platform linux/arm64 -f services/queue/Dockerfile -t " + repo + ":abc123 .",
		"docker push " + repo + ":abc123",
		"cdk deploy --all --parameters VwrTier2:QueueImageTag=abc123 --outputs-file cdk-outputs.json",
		"vwr admin edge-keys sync -secret arn:aws:secretsmanager:eu-west-1:123456789012:secret:Tier1Keys-AbC -store arn:aws:cloudfront::123456789012:key-value-store/0f0e",
	}
	if got := strings.Split(strings.TrimSpace(calls), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("calls\n%s\nwant\n%s", calls, strings.Join(want, "\n"))
	}
	if !strings.Contains(out, "smoke -url https://d111.cloudfront.net") {
		t.Errorf("no smoke hint:\n%s", out)
	}

	calls, out, err = run(fakes, true)
	if err != nil || strings.Count(calls, "--require-approval never") != 2 {
		t.Fatalf("with CI: %v\n%s\n%s", err, calls, out)
	}

	calls, out, err = run(noDocker, false)
	if err == nil || !strings.Contains(out, "Docker is not available") || !strings.Contains(out, "IMAGE_PUSHED=1") ||
		strings.Contains(calls, "deploy --all") || strings.Contains(calls, "edge-keys") {
		t.Fatalf("without Docker: %v\n%s\n%s", err, calls, out)
	}
	calls, out, err = run(noDocker, false, "IMAGE_PUSHED=1")
	if err != nil || strings.Contains(calls, "docker") || !strings.Contains(calls, "QueueImageTag=abc123") || !strings.Contains(calls, "edge-keys sync") {
		t.Fatalf("IMAGE_PUSHED: %v\n%s\n%s", err, calls, out)
	}
}
