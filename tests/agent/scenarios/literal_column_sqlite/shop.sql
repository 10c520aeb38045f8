CREATE TABLE orders(id INTEGER PRIMARY KEY, "Order Status" TEXT, amount REAL);
INSERT INTO orders VALUES (1, 'shipped', 10.0), (2, 'pending', 12.5), (3, 'shipped', 7.25);
