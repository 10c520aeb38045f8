CREATE TABLE people(name TEXT, tag TEXT);
INSERT INTO people VALUES ('Ava', NULL), ('Bo', 'NULL'), ('Cy', ''), ('Di', 'vip'), ('Ed', ' vip'), ('Fa', 'null');
