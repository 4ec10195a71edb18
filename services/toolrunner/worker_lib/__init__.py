"""Code that runs inside sandboxed workers and is shared by several tools: the request/result I/O, the
task-call and tensor helpers, the GPU timing method, and the two shared worker entries (`load_task`, which
tasks.py runs for every tool that reads a task, and `launch_task`, which ncu and compute-sanitizer run)."""
