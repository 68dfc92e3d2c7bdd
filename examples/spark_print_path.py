"""A PySpark job whose tasks write through `stagecommit stage --print-path`.

Every Spark partition is one stagecommit task (its partition index) and every Spark task
attempt one stagecommit attempt, so speculative and retried copies are told apart: the first
commit of a task wins, the others get exit 3 and their output is never published. The driver
stages the job, runs the tasks, and commits once; a failed run leaves the table untouched.

    spark-submit spark_print_path.py s3a://warehouse/sales 8

Executors need Node 20+ and `stagecommit` on their PATH, and the store's settings (a config
file, AWS_* or HADOOP_CONF_DIR) in their environment. A writer that writes through Spark or
Hadoop itself into the printed dir may leave its `_SUCCESS` and `.crc` markers there:
commit-task leaves them out.
"""
import csv
import os
import subprocess
import sys
import tempfile

from pyspark import TaskContext
from pyspark.sql import SparkSession

SC = os.environ.get("STAGECOMMIT", "stagecommit").split()


def run(*args):
    return subprocess.run([*SC, *args], check=True, capture_output=True, text=True).stdout.strip()


def write_task(job):
    def write(index, rows):
        ctx = TaskContext.get()
        task, attempt = str(index), str(ctx.attemptNumber())
        by_day = {}
        for row in rows:
            by_day.setdefault(row["dt"], []).append(row)
        attempt_dir = run("stage", "--job", job, "--task", task, "--attempt", attempt, "--print-path")
        remote = "://" in attempt_dir  # S3 or HDFS: write locally, then `stage FILE` uploads
        base = tempfile.mkdtemp() if remote else attempt_dir
        for dt, day in by_day.items():
            out = os.path.join(base, f"dt={dt}")
            os.makedirs(out, exist_ok=True)
            path = os.path.join(out, f"part-{index:05d}.csv")
            with open(path, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=["id", "dt", "amount"])
                w.writeheader()
                w.writerows(r.asDict() for r in day)
            if remote:
                run("stage", "--job", job, "--task", task, "--attempt", attempt, "--partition", f"dt={dt}", path)
        done = subprocess.run([*SC, "commit-task", "--job", job, "--task", task, "--attempt", attempt], capture_output=True, text=True)
        if done.returncode not in (0, 3):  # 3: another attempt of this task won
            raise RuntimeError(f"commit-task {task}/{attempt} exited {done.returncode}: {done.stderr}")
        yield (task, done.returncode)

    return write


def main():
    target, partitions = sys.argv[1], int(sys.argv[2])
    spark = SparkSession.builder.appName("stagecommit-example").getOrCreate()
    df = spark.range(0, 1000).selectExpr("id", "date_add('2026-11-28', cast(id % 3 as int)) as dt", "id * 10 as amount")
    df = df.selectExpr("id", "cast(dt as string) as dt", "amount").repartition(partitions)
    job = run("stage", "--target", target, "--mode", "overwrite", "--partition-by", "dt", "--tasks", str(partitions))
    try:
        df.rdd.mapPartitionsWithIndex(write_task(job)).collect()
    except Exception:
        run("abort", "--job", job)
        raise
    print(run("commit-job", "--job", job))


if __name__ == "__main__":
    main()
