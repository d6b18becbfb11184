import type { MouseEvent, ReactNode } from "react";
import { hrefOf, navigate, type Route } from "../router";

/** An in-app link: a real href (open in a new tab works), navigated without a reload. */
export function Link(props: { to: Route; children: ReactNode; className?: string }) {
  const onClick = (e: MouseEvent<HTMLAnchorElement>) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(props.to);
  };
  return (
    <a href={hrefOf(props.to)} onClick={onClick} className={props.className}>
      {props.children}
    </a>
  );
}
