-- A small concert database in Spider's style (written for quarry's eval tests).
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER,
                     net_worth REAL);
INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52, 1.5),
  (2, 'Timbaland', 'United States', 32, 2.25), (3, 'Justin Brown', 'France', 29, 0.1),
  (4, 'Rose White', 'France', 41, 0.2), (5, 'John Nizinik', 'France', 43, 0.7),
  (6, 'Tribal King', 'United States', 25, NULL), (7, 'Ana Doe', NULL, 36, 0.3);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, concert_name TEXT, year INTEGER);
INSERT INTO concert VALUES (1, 'Auditions', 2014), (2, 'Super bootcamp', 2014),
  (3, 'Home Visits', 2015);
CREATE TABLE singer_in_concert (concert_id INTEGER, singer_id INTEGER);
INSERT INTO singer_in_concert VALUES (1, 2), (1, 3), (2, 3), (2, 5), (3, 1), (3, 6);
