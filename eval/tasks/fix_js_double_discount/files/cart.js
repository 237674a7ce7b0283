'use strict';

function subtotal(items) {
  return items.reduce((sum, item) => sum + item.price * item.qty, 0);
}

function applyDiscount(amount, rate) {
  return amount * (1 - rate);
}

function total(items, discountRate) {
  const discounted = applyDiscount(subtotal(items), discountRate);
  return applyDiscount(discounted, discountRate);
}

module.exports = { subtotal, applyDiscount, total };
