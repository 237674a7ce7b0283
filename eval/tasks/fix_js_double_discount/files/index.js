'use strict';
const { total } = require('./cart');
const { money } = require('./format');

const items = [{ price: 60, qty: 1 }, { price: 20, qty: 2 }];
console.log('to pay:', money(total(items, 0.1)));
