// Splits a list into pages for the orders screen.

/** The items on page `page` (counting from 1), `size` items a page. */
export function pageOf(items, page, size) {
  const start = (page - 1) * size;
  return items.slice(start, start + size - 1);
}

/** How many pages `count` items fill. */
export function pageCount(count, size) {
  return Math.ceil(count / size);
}
