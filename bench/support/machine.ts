/**
 * One line describing the machine a benchmark ran on, for its report: CPUs, model,
 * memory, Node version.
 */
import { availableParallelism, cpus, totalmem } from 'node:os';

export function machineLine(): string {
  return `Machine: ${availableParallelism()} × ${cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version}`;
}
