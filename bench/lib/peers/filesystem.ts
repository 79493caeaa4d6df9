/**
 * The file system a path lives on, e.g. `ext4 (/dev/vda)` or `tmpfs`: fsync on tmpfs costs
 * nothing, so where each store keeps its data is part of what its figures mean.
 */
import { readFileSync, realpathSync } from 'node:fs';

export function filesystemOf(target: string): string {
  let resolved = target;
  try {
    resolved = realpathSync(target);
  } catch {
    // not there (yet): judge by the path as given
  }
  let best: { mount: string; type: string; device: string } | undefined;
  try {
    for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) {
      const [device, mount, type] = line.split(' ');
      if (!device || !mount || !type) continue;
      const inside = resolved === mount || resolved.startsWith(mount.endsWith('/') ? mount : `${mount}/`);
      if (inside && (!best || mount.length >= best.mount.length)) best = { mount, type, device };
    }
  } catch {
    return 'unknown';
  }
  if (!best) return 'unknown';
  return best.type === 'tmpfs' ? 'tmpfs' : `${best.type} (${best.device})`;
}
