'use strict';
// Marks the search term in result snippets for the search results page.

/** Wraps every occurrence of `term` in `text` in <mark>…</mark>, ignoring case. */
function highlight(text, term) {
  if (term === '') return text;
  return text.replace(new RegExp(term, 'gi'), (found) => `<mark>${found}</mark>`);
}

module.exports = { highlight };
