import { pageCount, pageOf } from './paginate.js';

/** The orders screen: one page of orders, newest first, and where the user is. */
export function ordersScreen(orders, page, size = 10) {
  const newestFirst = [...orders].sort((a, b) => b.placedAt - a.placedAt);
  return {
    orders: pageOf(newestFirst, page, size),
    page,
    pages: pageCount(orders.length, size),
  };
}
