/**
 * The engine reports the paths of its items as this host sees them (a command's `cwd`, the files a change touched,
 * an image it viewed): they are stored, and shown to clients in both dialects, as paths inside the session's
 * environment (`/workspace/…`, see platform/workspace/environment-paths.ts). Only the fields that hold a path are mapped:
 * what the agent wrote or printed (messages, command lines, outputs, diffs) is its own and stays as it is.
 */

import type { HostPaths } from "../../platform/workspace/environment-paths.js";
import type { StoredItem } from "../../store/types.js";

export function mapItemPaths(item: StoredItem, paths: HostPaths): StoredItem {
  switch (item.type) {
    case "commandExecution":
      return {
        ...item,
        cwd: paths.map(item.cwd),
        commandActions: (item.commandActions ?? []).map((a) =>
          "path" in a ? { ...a, path: paths.mapOptional(a.path) } : a,
        ) as typeof item.commandActions,
      };
    case "fileChange":
      return { ...item, changes: (item.changes ?? []).map((c) => ({ ...c, path: paths.map(c.path) })) };
    case "imageView":
      return { ...item, path: paths.map(item.path) };
    default:
      return item;
  }
}
