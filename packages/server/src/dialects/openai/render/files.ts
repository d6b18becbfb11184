/** The official `file` object of the Files API (`openai/resources/files`), as the API sends it. */
import type { FileDeleted, FileObject } from "openai/resources/files";
import type { FileRecord } from "../../../model/records.js";

/** `expires_at` and `status_details` are always sent (null when there is none), as the official API does. */
export type FileObjectWire = Omit<FileObject, "expires_at" | "status_details"> & {
  expires_at: number | null;
  status_details: string | null;
};

export function fileObject(f: FileRecord): FileObjectWire {
  return {
    id: f.id,
    object: "file",
    bytes: f.bytes,
    created_at: Math.floor(f.created_at),
    expires_at: f.expires_at === null ? null : Math.floor(f.expires_at),
    filename: f.filename,
    // (`evals` is a purpose uploads may give that the response type does not list yet.)
    purpose: f.purpose as FileObject["purpose"],
    // Uploads are complete when they are answered: nothing is processed afterwards.
    status: "processed",
    status_details: null,
  };
}

export const fileDeletedObject = (id: string): FileDeleted => ({ id, object: "file", deleted: true });

/** `Content-Disposition: attachment` with the file's name (an ASCII fallback, and the exact name per RFC 5987). */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, "_");
  const exact = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16)}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${exact}`;
}
