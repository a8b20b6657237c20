'use strict';
// Shopping carts, one per customer.

const EMPTY_CART = { items: [], coupon: null };

function createCart(owner) {
  return { ...EMPTY_CART, owner };
}

function addItem(cart, sku, quantity = 1) {
  const line = cart.items.find((item) => item.sku === sku);
  if (line) line.quantity += quantity;
  else cart.items.push({ sku, quantity });
  return cart;
}

function itemCount(cart) {
  return cart.items.reduce((sum, item) => sum + item.quantity, 0);
}

module.exports = { createCart, addItem, itemCount };
