/** Directories left out of every checkpoint unless `exclude` says otherwise (gitignore syntax). */
export const DEFAULT_EXCLUDES: readonly string[] = [
  "node_modules/",
  ".venv/",
  "venv/",
  "__pycache__/",
  ".mypy_cache/",
  ".pytest_cache/",
  ".ruff_cache/",
  ".tox/",
  ".nox/",
  "dist/",
  "build/",
  "target/",
  ".next/",
  ".nuxt/",
  ".svelte-kit/",
  ".turbo/",
  ".parcel-cache/",
  ".cache/",
  ".gradle/",
  ".terraform/",
  "coverage/",
];

export const DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024;
