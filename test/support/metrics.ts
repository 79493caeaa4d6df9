/** Reading a server's own /metrics in tests: what it exported, not what it says it did. */

/** `lock_wait_seconds_count{outcome}` on the server at `url`, 0 before the first such wait. */
export async function waitOutcomeCount(url: string, outcome: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('lock_wait_seconds_count') && l.includes(`outcome="${outcome}"`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}
