#!/usr/bin/env python3
"""Pre-push hook overhead: CPU time of a whole `git push` to a local bare remote, per variant,
measured side by side and interleaved run by run (A B C ... A B C ...).

Variants: no hook; a plain `exit 0` hook; husky (npm) with a no-op `.husky/pre-push`;
lefthook (npm) with a no-op pre-push command; pre-commit (PyPI) with a no-op pre-push hook;
itergate with a no-op check; itergate with a cached tree. Every timed push carries a new commit (lefthook skips pushes without a diff).

Usage: benches/hook_overhead.py ITERGATE_BIN [ROUNDS]   (tools are installed into a temp dir)
Set HOOK_OVERHEAD_SAMPLES=1 to print every sample, not only the medians.
"""
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

ENV = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b",
           GIT_COMMITTER_EMAIL="b@x", NO_COLOR="1")


def sh(args, cwd=None, env=None, check=True):
    return subprocess.run(args, cwd=cwd, env=env or ENV, check=check,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_repo(root, name):
    repo = os.path.join(root, name)
    remote = os.path.join(root, name + ".git")
    sh(["git", "init", "-q", "-b", "main", repo])
    sh(["git", "init", "-q", "--bare", "-b", "main", remote])
    sh(["git", "remote", "add", "origin", remote], cwd=repo)
    with open(os.path.join(repo, "f.txt"), "w") as f:
        f.write("0\n")
    sh(["git", "add", "."], cwd=repo)
    sh(["git", "commit", "-q", "-m", "base"], cwd=repo)
    sh(["git", "push", "-q", "--no-verify", "origin", "main"], cwd=repo)
    sh(["git", "checkout", "-q", "-b", "work"], cwd=repo)
    sh(["git", "push", "-q", "--no-verify", "origin", "work"], cwd=repo)
    return repo


def write_hook(repo, body):
    path = os.path.join(repo, ".git", "hooks", "pre-push")
    with open(path, "w") as f:
        f.write(body)
    os.chmod(path, 0o755)


def setup(root, itergate, tools):
    variants = {}
    variants["no hook"] = make_repo(root, "none")
    r = make_repo(root, "exit0")
    write_hook(r, "#!/bin/sh\nexit 0\n")
    variants["exit 0 hook"] = r
    if tools.get("husky"):
        r = make_repo(root, "husky")
        sh([tools["husky"]], cwd=r)  # sets core.hooksPath to .husky/_ and writes its shims
        with open(os.path.join(r, ".husky", "pre-push"), "w") as f:
            f.write("true\n")
        sh(["git", "add", "."], cwd=r)
        sh(["git", "commit", "-q", "-m", "husky"], cwd=r)
        variants["husky"] = r
    if tools.get("lefthook"):
        r = make_repo(root, "lefthook")
        with open(os.path.join(r, "lefthook.yml"), "w") as f:
            f.write("pre-push:\n  commands:\n    noop:\n      run: 'true'\n")
        sh([tools["lefthook"], "install"], cwd=r)
        sh(["git", "add", "."], cwd=r)
        sh(["git", "commit", "-q", "-m", "lefthook"], cwd=r)
        variants["lefthook"] = r
    if tools.get("pre-commit"):
        r = make_repo(root, "precommit")
        with open(os.path.join(r, ".pre-commit-config.yaml"), "w") as f:
            f.write("repos:\n- repo: local\n  hooks:\n  - id: noop\n    name: noop\n    entry: 'true'\n"
                    "    language: system\n    pass_filenames: false\n    always_run: true\n    stages: [pre-push]\n")
        sh(["git", "add", "."], cwd=r)
        sh(["git", "commit", "-q", "-m", "pre-commit"], cwd=r)
        sh([tools["pre-commit"], "install", "-t", "pre-push"], cwd=r)
        variants["pre-commit"] = r
    for name, cached in (("itergate no-op check", False), ("itergate cached tree", True)):
        r = make_repo(root, "itergate-" + ("cached" if cached else "noop"))
        with open(os.path.join(r, ".itergate.yml"), "w") as f:
            f.write("checks:\n  noop:\n    run: 'true'\nhook:\n  base: main\n")
        sh(["git", "add", "."], cwd=r)
        sh(["git", "commit", "-q", "-m", "itergate"], cwd=r)
        sh([itergate, "hook", "install"], cwd=r)
        variants[name] = r
    return variants


def push_once(repo, round_no, cached):
    # Cached: alternate between two contents, so after two pushes every tree is cached.
    content = str(round_no % 2) if cached else f"{round_no}\n"
    with open(os.path.join(repo, "f.txt"), "w") as f:
        f.write(content + "\n")
    sh(["git", "commit", "-q", "--allow-empty", "-am", f"r{round_no}"], cwd=repo)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    sh(["git", "push", "-q", "origin", "work"], cwd=repo)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000.0


def install_tools(root):
    tools = {}
    npm_dir = os.path.join(root, "npm")
    os.makedirs(npm_dir)
    # lefthook's postinstall installs hooks into the current repository unless told not to:
    # run npm from the scratch directory, with LEFTHOOK=0.
    npm_env = dict(ENV, LEFTHOOK="0", CI="true")
    npm = ["npm", "install", "--silent", "--prefix", npm_dir, "lefthook", "husky"]
    if sh(npm, cwd=npm_dir, env=npm_env, check=False).returncode == 0:
        for tool in ("lefthook", "husky"):
            tools[tool] = os.path.join(npm_dir, "node_modules", ".bin", tool)
    venv = os.path.join(root, "venv")
    if sh([sys.executable, "-m", "venv", venv], check=False).returncode == 0:
        pip = os.path.join(venv, "bin", "pip")
        if sh([pip, "install", "-q", "pre-commit"], check=False).returncode == 0:
            tools["pre-commit"] = os.path.join(venv, "bin", "pre-commit")
    return tools


def main():
    itergate = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    root = tempfile.mkdtemp(prefix="hook-overhead-")
    try:
        tools = install_tools(root)
        variants = setup(root, itergate, tools)
        samples = {name: [] for name in variants}
        for i in range(2):  # warm-up: fill the caches, prime the page cache
            for name, repo in variants.items():
                push_once(repo, i, name.endswith("cached tree"))
        for i in range(2, rounds + 2):
            for name, repo in variants.items():
                samples[name].append(push_once(repo, i, name.endswith("cached tree")))
        if os.environ.get("HOOK_OVERHEAD_SAMPLES"):
            for name, values in samples.items():
                print(f"{name:24} " + " ".join(f"{v:.0f}" for v in values))
        base = statistics.median(samples["exit 0 hook"])
        print(f"git push CPU (user+sys), median of {rounds} interleaved rounds")
        print(f"{'variant':24} {'median ms':>10} {'over exit-0 ms':>15}")
        for name, values in samples.items():
            m = statistics.median(values)
            print(f"{name:24} {m:10.1f} {m - base:15.1f}")
        for peer in ("husky", "lefthook", "pre-commit"):
            if peer in samples:
                peer_over = statistics.median(samples[peer]) - base
                for ours in ("itergate no-op check", "itergate cached tree"):
                    over = statistics.median(samples[ours]) - base
                    ratio = over / peer_over if peer_over > 0 else float("nan")
                    print(f"{ours} overhead / {peer} overhead = {ratio:.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
