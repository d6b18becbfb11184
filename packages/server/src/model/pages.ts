/** A page of a list, and how a list is read: the cursor pagination every list of the API uses. */
export interface Page<T> {
  data: T[];
  has_more: boolean;
}

export interface ListOptions {
  /** Exclusive cursor: an id of the list. */
  after?: string;
  /** 1..1000, default 20. */
  limit?: number;
  /** default "desc" (newest first) for agents/sessions/turns, "asc" for items. */
  order?: "asc" | "desc";
}
