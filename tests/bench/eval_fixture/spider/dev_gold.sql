SELECT count(*) FROM singer	singers
SELECT name FROM singer ORDER BY age DESC	singers
SELECT country FROM singer	singers
SELECT country, count(*) FROM singer GROUP BY country	singers
SELECT avg(net_worth) FROM singer	singers
SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.singer_id JOIN concert AS T3 ON T1.concert_id = T3.concert_id WHERE T3.year = 2014	singers
SELECT name, age FROM singer ORDER BY age DESC LIMIT 1	singers
SELECT name FROM singer WHERE country = "Atlantis"	singers
SELECT DISTINCT country FROM singer WHERE country IS NOT NULL	singers
SELECT category, sum(stock) FROM products GROUP BY category	shop
SELECT name, price FROM products WHERE price > 10 ORDER BY price	shop
SELECT order_id FROM orders WHERE discount IS NULL	shop
SELECT T1.name, avg(T2.quantity) FROM products AS T1 JOIN orders AS T2 ON T1.product_id = T2.product_id GROUP BY T1.name	shop
