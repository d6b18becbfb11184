/** A failure to show where it happened (an alert for assistive technology), or nothing. */
export function ErrorLine(props: { error: string | null | undefined }) {
  if (!props.error) return null;
  return (
    <p role="alert" className="error">
      {props.error}
    </p>
  );
}
