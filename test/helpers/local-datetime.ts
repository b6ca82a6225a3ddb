/**
 * Card markdown's `<local_datetime millisecond='…' format_type='…'></local_datetime>` (富文本 国际化时间) as a
 * client shows it: the time in the viewer's own zone, the date in the client's language. Written here from
 * the doc's format list, not from the builder, so a test reads a card the way a reader in `timeZone` would.
 */
const TAG = /<local_datetime\s+millisecond='(\d+)'\s+format_type='([a-z_]+)'\s*><\/local_datetime>/g;

export function shownIn(text: string, timeZone: string, language: "zh_cn" | "en_us" = "zh_cn"): string {
  return text.replace(TAG, (_match, ms: string, format: string) => {
    const at = Number(ms);
    const part = (options: Intl.DateTimeFormatOptions) =>
      new Intl.DateTimeFormat("en-US", { timeZone, ...options }).format(at);
    switch (format) {
      case "time":
        return new Intl.DateTimeFormat("en-GB", { timeZone, hour: "2-digit", minute: "2-digit" }).format(at);
      case "date_short":
        return language === "zh_cn"
          ? `${part({ month: "numeric" })}月${part({ day: "numeric" })}日`
          : `${part({ month: "short" })} ${part({ day: "numeric" })}`;
      default:
        throw new Error(`format_type ${format} is not read by this helper`);
    }
  });
}

/** A text's `i18n_content` (or any record of strings) as read in `timeZone`. */
export function allShownIn(texts: Record<string, unknown> | undefined, timeZone: string) {
  if (!texts) return texts;
  return Object.fromEntries(
    Object.entries(texts).map(([locale, text]) => [
      locale,
      shownIn(String(text), timeZone, locale === "en_us" ? "en_us" : "zh_cn"),
    ]),
  );
}
