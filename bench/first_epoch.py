"""Where does epoch 1 spend the time that later epochs do not?

`python -m bench first_epoch` (a diagnostic, not in the default `make bench` set): the
runner's own setup for cifar10 (data, model, the untimed warm-up), then epochs 1-3 step by
step with a device sync after each step, printing the epoch-start hook's time and minor page
faults and every step that took over twice the epoch's median step or faulted in more pages
than 300 and 3 times the median step's. First uses (a new batch shape, a kernel loaded on
first launch, a host buffer touched for the first time) show up as such steps; a cost
repeated every epoch shows in every epoch. The syncs slow each step a little: this finds
one-off costs, it does not time epochs. The cuda recipe where torch sees a GPU, else the cpu
recipe at width 0.25 on 5,000 images; real CIFAR-10 where extracted (bench/overhead.py), else
synthetic data.
"""

from __future__ import annotations

import resource
import statistics
import tempfile
import time

from bench.overhead import cifar_data, diagnostic_cifar, gpu_visible


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def main() -> None:
    import torch

    from perfsuite.runner import RunOptions
    from perfsuite.runner.routes import run as loop

    device = "cuda" if gpu_visible() else "cpu"
    data = cifar_data()
    kw = diagnostic_cifar(device, data)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    with tempfile.TemporaryDirectory() as out:
        opts = RunOptions(workload="cifar10", out=out, capture=False, progress=False, seed=0, **kw)
        run = loop._Run(opts)  # the runner's phases, driven here one step at a time
        run._setup()
        wl, state, src = run.workload, run.state, run.data
        print(
            f"cifar10 on {device} ({'real' if data else 'synthetic'} data): batch "
            f"{run.recipe.batch_size}, {run.steps_per_epoch} steps per epoch, last batch "
            f"{src.num_train % run.recipe.batch_size or run.recipe.batch_size}"
        )
        for epoch in (1, 2, 3):
            sync()
            t0, f0 = time.perf_counter(), _faults()
            wl.on_epoch_start(state, src, epoch)
            sync()
            hook_s, hook_f = time.perf_counter() - t0, _faults() - f0
            steps = []  # (step, size, seconds, of which drawing the batch, faults)
            batches = iter(src.train_batches(run.recipe.batch_size, run.gen))
            while True:
                t, f = time.perf_counter(), _faults()
                batch = next(batches, None)
                if batch is None:
                    break
                drawn = time.perf_counter() - t
                wl.train_step(state, batch)
                sync()
                steps.append(
                    (len(steps) + 1, batch.size, time.perf_counter() - t, drawn, _faults() - f)
                )
            wl.on_epoch_end(state, src, epoch)
            sync()
            total, faults = time.perf_counter() - t0, _faults() - f0
            median = statistics.median(s[2] for s in steps)
            # on CPU every step faults (the allocator hands memory back): flag only outliers
            many = max(300, 3 * statistics.median(s[4] for s in steps))
            print(
                f"epoch {epoch}: {total:.3f} s, {faults} minor faults; start hook "
                f"{hook_s * 1e3:.1f} ms, {hook_f} faults; median step {median * 1e3:.2f} ms"
            )
            for i, size, sec, drawn, flt in steps:
                if sec > 2 * median or flt > many:
                    print(
                        f"  step {i} ({size} examples): {sec * 1e3:.1f} ms (batch drawn in "
                        f"{drawn * 1e3:.1f} ms), {flt} faults"
                    )


if __name__ == "__main__":
    main()
