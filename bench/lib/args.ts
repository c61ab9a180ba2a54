/** The value after `--name` on the benchmark's command line, if given. */
export function option(name: string, argv = process.argv.slice(2)): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}
