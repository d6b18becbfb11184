/**
 * The official Files API (`client.files.*`: `/v1/files`), per project: upload (`multipart/form-data` with `file`,
 * `purpose` and an optional `expires_after`; the one route of the service that takes a non-JSON body, see
 * http/trust.ts), retrieve, list (cursor pages, by purpose), content, delete. The SDKs send these requests without
 * `OpenAI-Beta: agents=v1`, so they are served whatever the dialect header says, always in the official shapes
 * (errors included). Uploads are streamed to disk (domain/files/storage.ts), never held in memory, up to
 * `--file-size-limit` (413 beyond); one that is refused or interrupted leaves nothing behind.
 */

import { open } from "node:fs/promises";
import fastifyMultipart from "@fastify/multipart";
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import type { Application, FileStorage, NewFile, Received } from "../../application/index.js";
import type { App } from "../../http/app-types.js";
import { idempotent } from "../../http/idempotency.js";
import { ApiError, badRequest, notFound, payloadTooLarge } from "../../kernel/errors.js";
import { PURPOSES, parseExpiresAfter, parseFilename, parsePurpose } from "../../model/file-params.js";
import type { FilePurpose } from "../../model/records.js";
import { contentDisposition, fileDeletedObject, fileObject } from "./render/files.js";
import * as openai from "./render.js";

const FileParams = z.object({ file_id: z.string() });

const FileListQuery = z.object({
  after: z.string().min(1).optional(),
  // (The official maximum is 10,000; a page holds at most the store's 1000, `has_more` says there is more.)
  limit: z.coerce.number().int().min(1).max(10_000).optional(),
  order: z.enum(["asc", "desc"]).optional(),
  purpose: z.string().optional(),
});

/** The form fields an upload may carry besides `file`. */
const FIELDS = new Set(["purpose", "expires_after[anchor]", "expires_after[seconds]"]);
const FIELD_BYTES = 4096;

export function fileRoutes(app: App, ops: Application): void {
  app.register(async (files: App) => {
    // Served for both dialect headers, always answered in the official shapes.
    files.addHook("onRoute", (route) => {
      if (route.constraints) {
        const { dialect: _dialect, ...others } = route.constraints as Record<string, unknown>;
        route.constraints = others;
      }
      route.config = { ...route.config, dialect: "openai" };
    });
    // The multipart parser exists in this context only (the rest of the service parses JSON alone).
    await files.register(fastifyMultipart, { throwFileSizeLimit: false });
    routes(files, ops);
  });
}

function routes(app: App, ops: Application): void {
  const { files } = ops;

  app.post("/v1/files", { config: { multipartUpload: true } }, async (req, reply) => {
    const upload = await readUploadForm(req, files.storage, ops.settings.maxFileBytes);
    try {
      // A repeat with the same Idempotency-Key and the same upload (contents, name, purpose, expiry) gets the same
      // file; its contents are dropped.
      const fingerprint = {
        sha256: upload.received.sha256,
        bytes: upload.received.bytes,
        filename: upload.filename,
        purpose: upload.purpose,
        expires_after: upload.expiresAfterSeconds,
      };
      return await idempotent(
        ops.idempotency,
        `files:${req.scope.projectId}`,
        req,
        reply,
        async () => ({ status: 200, body: fileObject(await files.create(req.scope, upload)) }),
        fingerprint,
      );
    } finally {
      await files.storage.discard(upload.received.tmp);
    }
  });

  app.get("/v1/files", { schema: { querystring: FileListQuery } }, async (req) => {
    const q = req.query;
    // A purpose no file can have matches nothing.
    if (q.purpose !== undefined && !(PURPOSES as readonly string[]).includes(q.purpose)) {
      return openai.page({ data: [], has_more: false });
    }
    const p = await files.list(req.scope, {
      limit: Math.min(q.limit ?? 1000, 1000),
      ...(q.after ? { after: q.after } : {}),
      ...(q.order ? { order: q.order } : {}),
      ...(q.purpose !== undefined ? { purpose: q.purpose as FilePurpose } : {}),
    });
    return openai.page({ data: p.data.map(fileObject), has_more: p.has_more });
  });

  app.get("/v1/files/:file_id", { schema: { params: FileParams } }, async (req) =>
    fileObject(await files.get(req.scope, req.params.file_id)),
  );

  app.get("/v1/files/:file_id/content", { schema: { params: FileParams } }, async (req, reply) => {
    const f = await files.get(req.scope, req.params.file_id);
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(files.contentPath(f), "r");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      // Deleted meanwhile, or (several instances) a files directory that is not shared.
      req.log.warn({ file: f.id }, "a file's contents are missing (is --file-dir shared by every instance?)");
      throw notFound(`No such File object: ${f.id}`, "file_id");
    }
    return (
      reply
        .header("content-type", "application/octet-stream")
        .header("content-length", String(f.bytes))
        .header("content-disposition", contentDisposition(f.filename))
        // A client uploaded it: never let a browser run it on this origin.
        .header("x-content-type-options", "nosniff")
        .header("content-security-policy", "sandbox; default-src 'none'")
        .send(handle.createReadStream())
    );
  });

  app.delete("/v1/files/:file_id", { schema: { params: FileParams } }, async (req) => {
    await files.delete(req.scope, req.params.file_id);
    return fileDeletedObject(req.params.file_id);
  });
}

/**
 * Reads the upload form: the file (streamed to a temporary file, whatever the order of the parts: the SDKs send it
 * before the other fields) and the fields, then checks them. Anything refused removes what was received.
 */
async function readUploadForm(req: FastifyRequest, storage: FileStorage, maxBytes: number): Promise<NewFile> {
  const fields = new Map<string, string>();
  let received: Received | null = null;
  let filename: string | undefined;
  try {
    const parts = req.parts({
      limits: { fileSize: maxBytes, files: 1, fields: 8, fieldSize: FIELD_BYTES, parts: 9, headerPairs: 100 },
    });
    for await (const part of parts) {
      if (part.type === "file") {
        if (part.fieldname !== "file") {
          throw badRequest(`Unexpected file in '${part.fieldname}': the file goes in 'file'`, part.fieldname);
        }
        received = await storage.receive(part.file);
        if (part.file.truncated) {
          throw payloadTooLarge(
            `The file is larger than this server's limit of ${maxBytes} bytes (--file-size-limit)`,
          );
        }
        filename = part.filename;
        continue;
      }
      const name = part.fieldname;
      if (part.fieldnameTruncated || part.valueTruncated) {
        throw badRequest(`The field '${name.slice(0, 100)}' is too long`, name.slice(0, 100));
      }
      if (name === "file") {
        throw badRequest("'file' must be a file part (with filename=… in its Content-Disposition)", "file");
      }
      if (!FIELDS.has(name)) {
        throw badRequest(`Unknown parameter: '${name.slice(0, 100)}'`, name.slice(0, 100));
      }
      if (fields.has(name)) throw badRequest(`The field '${name}' is given twice`, name);
      fields.set(name, typeof part.value === "string" ? part.value : JSON.stringify(part.value));
    }
    if (!received) throw badRequest("Missing required parameter: 'file' (a file part)", "file");
    return {
      received,
      filename: parseFilename(filename),
      purpose: parsePurpose(fields.get("purpose")),
      expiresAfterSeconds: parseExpiresAfter(
        fields.get("expires_after[anchor]"),
        fields.get("expires_after[seconds]"),
      ),
    };
  } catch (err) {
    if (received) await storage.discard(received.tmp);
    throw formError(err);
  }
}

/** What went wrong reading a form, as the client's error (a disk that failed stays the server's). */
function formError(err: unknown): unknown {
  if (err instanceof ApiError) return err;
  const e = err as NodeJS.ErrnoException & { statusCode?: number };
  if (e.syscall !== undefined) return err;
  switch (e.code) {
    case "FST_FILES_LIMIT":
      return badRequest("Only one file may be uploaded at a time (in the field 'file')", "file");
    case "FST_FIELDS_LIMIT":
    case "FST_PARTS_LIMIT":
      return badRequest("Too many form fields: send 'file', 'purpose' and optionally 'expires_after'");
    case "FST_MP_PREMATURE_CLOSE":
      return badRequest("The upload ended before the form was complete");
    default:
      return badRequest(`Malformed multipart/form-data body: ${e.message ?? String(err)}`);
  }
}
