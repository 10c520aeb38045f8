-- A small shop database in Spider's style (written for quarry's eval tests).
CREATE TABLE products (product_id INTEGER PRIMARY KEY, name TEXT, category TEXT, price REAL,
                       stock INTEGER);
INSERT INTO products VALUES (1, 'Widget', 'tools', 9.99, 10), (2, 'Gadget', 'tools', 24.5, 3),
  (3, 'Doohickey', 'toys', 12.0, 7), (4, 'Gizmo', 'toys', 4.25, 0),
  (5, 'Thing', 'garden', 15.75, NULL);
CREATE TABLE orders (order_id INTEGER PRIMARY KEY, product_id INTEGER, quantity INTEGER,
                     discount REAL);
INSERT INTO orders VALUES (1, 1, 3, NULL), (2, 1, 2, 0.1), (3, 2, 1, NULL), (4, 3, 5, 0.25),
  (5, 3, 1, NULL), (6, 4, 4, 0.05);
